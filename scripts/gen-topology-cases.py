#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns upstream's topology manager policy merge test cases (pkg/kubelet/cm/topologymanager/policy_test.go of
the Kubernetes release ckubelet follows) into a C table for tests/unit/cm/topologymanager.c: the cases' data only
(name, each provider's hints per resource, the expected hint). Usage: gen-topology-cases.py policy_test.go > out.h
"""
import re
import sys

TOK = re.compile(r'\s*(//[^\n]*|"(?:[^"\\]|\\.)*"|\.\.\.|[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|\d+|.)', re.S)


def tokens(text):
    out, pos = [], 0
    while pos < len(text):
        m = TOK.match(text, pos)
        if not m:
            if text[pos:].strip() == '':
                break
            raise SystemExit('cannot tokenize at %r' % text[pos:pos + 40])
        pos = m.end()
        t = m.group(1)
        if not t.startswith('//'):
            out.append(t)
    return out


class P:
    def __init__(self, toks):
        self.t, self.i = toks, 0

    def peek(self, k=0):
        return self.t[self.i + k]

    def eat(self, want=None):
        t = self.t[self.i]
        if want is not None and t != want:
            raise SystemExit('expected %r, got %r at %r' % (want, t, self.t[self.i:self.i + 10]))
        self.i += 1
        return t

    def mask(self):
        # NewTestBitMask(0, 1) | NewTestBitMask(numaNodes...) | nil
        if self.peek() == 'nil':
            self.eat()
            return None
        self.eat('NewTestBitMask')
        self.eat('(')
        bits = []
        while self.peek() != ')':
            t = self.eat()
            if t == ',':
                continue
            if t == 'numaNodes':
                self.eat('...')
                bits.append('ALL')
            else:
                bits.append(int(t))
        self.eat(')')
        return bits

    def hint(self):
        # {NUMANodeAffinity: X, Preferred: B} or {X, B}
        self.eat('{')
        mask, pref = None, False
        if self.peek() == 'NUMANodeAffinity':
            while self.peek() != '}':
                k = self.eat()
                if k == ',':
                    continue
                self.eat(':')
                if k == 'NUMANodeAffinity':
                    mask = self.mask()
                elif k == 'Preferred':
                    pref = self.eat() == 'true'
        else:
            mask = self.mask()
            self.eat(',')
            pref = self.eat() == 'true'
            if self.peek() == ',':
                self.eat()
        self.eat('}')
        return (mask, pref)

    def hint_list(self):
        if self.peek() == 'nil':
            self.eat()
            return None
        if self.peek() == '[':
            self.eat('[')
            self.eat(']')
            self.eat('TopologyHint')
        self.eat('{')
        hints = []
        while self.peek() != '}':
            if self.peek() == ',':
                self.eat()
                continue
            hints.append(self.hint())
        self.eat('}')
        return hints

    def provider(self):
        self.eat('&')
        self.eat('mockHintProvider')
        self.eat('{')
        res = None
        while self.peek() != '}':
            if self.peek() == ',':
                self.eat()
                continue
            if self.peek() == 'nil':
                self.eat()
                continue
            self.eat('map')
            self.eat('[')
            self.eat('string')
            self.eat(']')
            self.eat('[')
            self.eat(']')
            self.eat('TopologyHint')
            self.eat('{')
            res = []
            while self.peek() != '}':
                if self.peek() == ',':
                    self.eat()
                    continue
                name = self.eat()
                self.eat(':')
                res.append((name, self.hint_list()))
            self.eat('}')
        self.eat('}')
        return res

    def case(self):
        self.eat('{')
        c = {'hp': []}
        while self.peek() != '}':
            k = self.eat()
            if k == ',':
                continue
            self.eat(':')
            if k == 'name':
                c['name'] = self.eat()
            elif k == 'hp':
                self.eat('[')
                self.eat(']')
                self.eat('HintProvider')
                self.eat('{')
                while self.peek() != '}':
                    if self.peek() == ',':
                        self.eat()
                        continue
                    c['hp'].append(self.provider())
                self.eat('}')
            elif k == 'expected':
                self.eat('TopologyHint')
                c['expected'] = self.hint()
            else:
                raise SystemExit('unknown field %s' % k)
        self.eat('}')
        return c


def cases_of(text, header):
    i = text.index(header)
    j = text.index('[]policyMergeTestCase{', i) + len('[]policyMergeTestCase')
    toks = tokens(text[j:])
    p = P(toks)
    p.eat('{')
    out = []
    while p.peek() != '}':
        if p.peek() == ',':
            p.eat()
            continue
        out.append(p.case())
    return out


def c_mask(m):
    if m is None:
        return '.any = true'
    if m == ['ALL']:
        return '.all = true'
    return '.mask = 0x%x' % sum(1 << b for b in m)


def emit(name, cases):
    print('static const struct tm_case %s[] = {' % name)
    for c in cases:
        print('        { %s,' % c['name'])
        print('          (const struct tm_case_provider[]) {')
        for prov in c['hp']:
            if prov is None or len(prov) == 0:
                print('                  { 0, NULL },')
                continue
            print('                  { %d, (const struct tm_case_resource[]) {' % len(prov))
            for rname, hl in prov:
                if hl is None:
                    print('                            { %s, -1, NULL },' % rname)
                else:
                    hs = ', '.join('{ %s, .preferred = %s }' % (c_mask(m), 'true' if pf else 'false') for m, pf in hl)
                    print('                            { %s, %d, (const struct tm_case_hint[]) { %s } },' %
                          (rname, len(hl), hs or '{}'))
            print('                    } },')
        print('                  {} },')
        print('          %d,' % len(c['hp']))
        m, pf = c['expected']
        print('          { %s, .preferred = %s } },' % (c_mask(m), 'true' if pf else 'false'))
    print('};')
    print()


def main():
    text = open(sys.argv[1]).read()
    print('/* Generated by scripts/gen-topology-cases.py from upstream\'s policy_test.go: do not edit. */')
    print()
    emit('tm_cases_common', cases_of(text, 'func commonPolicyMergeTestCases('))
    emit('tm_cases_best_effort', cases_of(text, 'func (p *bestEffortPolicy) mergeTestCases('))
    emit('tm_cases_no_policies', cases_of(text, 'func (p *bestEffortPolicy) mergeTestCasesNoPolicies('))
    emit('tm_cases_closest', cases_of(text, 'func (p *bestEffortPolicy) mergeTestCasesClosestNUMA('))
    emit('tm_cases_single_numa', cases_of(text, 'func (p *singleNumaNodePolicy) mergeTestCases('))


main()
