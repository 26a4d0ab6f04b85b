#!/usr/bin/env python3
"""Writes the C schema table of src/apis/k8sproto_schema.inc from a FileDescriptorSet (protoc's
--descriptor_set_out --include_imports of k8s.io/api/core/v1/generated.proto): every message reachable from the
root messages given, with its fields in field-number order (name, number, type, repeated, message index) and the
encoding of the apimachinery types whose JSON is not their proto shape (Quantity, Time, MicroTime, IntOrString,
RawExtension, FieldsV1, Duration) and of map entries. No pointers in the table: names are offsets into one string,
messages are indexes, so the table is read-only data with no relocations.

An embedded Go struct whose JSON is inlined in its parent's object (`ProbeHandler `json:"" protobuf:"bytes,1,..."``
in a Probe) is a message field in the .proto but no key in the JSON: such fields are found in the Go types
(types.go of each package: PACKAGE=FILE arguments) and marked K8SPROTO_F_INLINE.

usage: gen.py DESCRIPTOR_SET VERSION PACKAGE=TYPES_GO... -- ROOT_MESSAGE... > src/apis/k8sproto_schema.inc
"""
import re
import sys

from google.protobuf import descriptor_pb2

SPECIAL = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "K8SPROTO_QUANTITY",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "K8SPROTO_TIME",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "K8SPROTO_MICROTIME",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "K8SPROTO_INTORSTRING",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "K8SPROTO_RAWJSON",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "K8SPROTO_RAWJSON",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "K8SPROTO_DURATION",
}
F = descriptor_pb2.FieldDescriptorProto
TYPES = {
    F.TYPE_STRING: "K8SPROTO_T_STRING",
    F.TYPE_BYTES: "K8SPROTO_T_BYTES",
    F.TYPE_BOOL: "K8SPROTO_T_BOOL",
    F.TYPE_INT32: "K8SPROTO_T_INT32",
    F.TYPE_INT64: "K8SPROTO_T_INT64",
    F.TYPE_DOUBLE: "K8SPROTO_T_DOUBLE",
    F.TYPE_MESSAGE: "K8SPROTO_T_MESSAGE",
}


def main():
    path, version = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    sep = rest.index("--")
    go_files, roots = rest[:sep], rest[sep + 1:]
    inline = set()  # (message full name, field number)
    embedded = re.compile(r'^\s+\*?[A-Z]\w*\s+`json:"(,inline)?"[^`]*protobuf:"bytes,(\d+),')
    for arg in go_files:
        package, _, go = arg.partition("=")
        struct = None
        with open(go) as f:
            for line in f:
                m = re.match(r"^type (\w+) struct \{", line)
                if m:
                    struct = m.group(1)
                    continue
                if line.startswith("}"):
                    struct = None
                    continue
                m = embedded.match(line)
                if struct and m:
                    inline.add((f"{package}.{struct}", int(m.group(2))))
    fds = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as f:
        fds.ParseFromString(f.read())
    msgs = {}

    def walk(prefix, m):
        name = prefix + "." + m.name
        msgs[name] = m
        for n in m.nested_type:
            walk(name, n)

    for fd in fds.file:
        for m in fd.message_type:
            walk(fd.package, m)

    order, seen = [], set()

    def reach(name):
        if name in seen:
            return
        seen.add(name)
        order.append(name)
        if name in SPECIAL:
            return
        for f in msgs[name].field:
            if f.type == F.TYPE_MESSAGE:
                reach(f.type_name.lstrip("."))

    for r in roots:
        reach(r)
    index = {n: i for i, n in enumerate(order)}
    strings, offsets = [], {}

    def s(text):
        if text not in offsets:
            offsets[text] = sum(len(x) + 1 for x in strings)
            strings.append(text)
        return offsets[text]

    fields, messages, used_inline = [], [], set()
    for name in order:
        m = msgs[name]
        kind = SPECIAL.get(name, "K8SPROTO_MAP_ENTRY" if m.options.map_entry else "K8SPROTO_PLAIN")
        first = len(fields)
        if name not in SPECIAL:
            for f in sorted(m.field, key=lambda f: f.number):
                if f.type not in TYPES:
                    sys.exit(f"gen.py: {name}.{f.name}: field type {f.type} not supported")
                sub = index[f.type_name.lstrip(".")] if f.type == F.TYPE_MESSAGE else 0xFFFF
                flags = []
                if f.label == F.LABEL_REPEATED:
                    flags.append("K8SPROTO_F_REPEATED")
                if (name, f.number) in inline:
                    if f.type != F.TYPE_MESSAGE or f.label == F.LABEL_REPEATED:
                        sys.exit(f"gen.py: {name}.{f.name}: an inline field that is not one message")
                    flags.append("K8SPROTO_F_INLINE")
                    used_inline.add((name, f.number))
                fields.append((s(f.name), f.number, TYPES[f.type], " | ".join(flags) or "0", sub,
                               f"{name.rsplit('.', 1)[1]}.{f.name}"))
        messages.append((s(name), first, len(fields) - first, kind, name))
    for name, number in sorted(inline - used_inline):
        if name in index:
            sys.exit(f"gen.py: {name} field {number} is inline in Go but not in the .proto")
    if len(order) >= 0xFFFF or len(fields) >= 0xFFFF or sum(len(x) + 1 for x in strings) > 0xFFFF:
        sys.exit("gen.py: table too large for 16-bit indexes")
    out = sys.stdout
    out.write("/* SPDX-License-Identifier: Apache-2.0 */\n")
    out.write(f"/* Generated by scripts/gen-k8s-proto-schema.sh from k8s.io/api {version} (core/v1/generated.proto and the\n")
    out.write(f" * apimachinery protos it imports): the {len(order)} messages reachable from {', '.join(roots)}. Do not edit. */\n\n")
    out.write("static const char k8sproto_strings[] =\n")
    for t in strings:
        out.write(f'        "{t}\\0"\n')
    out.write("        ;\n\n")
    out.write("static const struct k8sproto_field k8sproto_fields[] = {\n")
    for name_off, number, typ, flags, sub, comment in fields:
        out.write(f"        {{ {name_off}, {number}, {typ}, {flags}, {sub} }}, /* {comment} */\n")
    out.write("};\n\n")
    out.write("static const struct k8sproto_message k8sproto_messages[] = {\n")
    for name_off, first, n, kind, name in messages:
        out.write(f"        {{ {name_off}, {first}, {n}, {kind} }}, /* {index[name]}: {name} */\n")
    out.write("};\n")


if __name__ == "__main__":
    main()
