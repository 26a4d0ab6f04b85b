"""A fake kube-apiserver for the end-to-end tests of ckubelet joining a cluster.

It runs inside the test process (a ThreadingHTTPServer on a thread, HTTPS with its own CA made with the openssl
CLI), so a test can read and change the cluster state directly while ckubelet talks to it over the real
protocol. Only the Python standard library.

What it serves, with the apiserver's JSON shapes, status codes and error messages:

- discovery: /version, /healthz (/livez, /readyz), /api, /apis, /api/v1, /apis/<group>/<version>
- core/v1 pods (+ /status, /resize), nodes (+ /status), events, configmaps, secrets, services (+ /status),
  serviceaccounts/<n>/token; node.k8s.io/v1 runtimeclasses
  (TokenRequest); coordination.k8s.io/v1 leases; events.k8s.io/v1 events (the core events, converted);
  authentication.k8s.io/v1 tokenreviews and authorization.k8s.io/v1 subjectaccessreviews (create only)
- every stored resource: GET (get, list, watch, also under the legacy /watch/ prefix), POST, PUT, PATCH,
  DELETE; lists take fieldSelector, labelSelector, resourceVersion (+ resourceVersionMatch), limit and
  continue; watches take resourceVersion, fieldSelector, labelSelector, allowWatchBookmarks and
  timeoutSeconds
- PATCH as application/merge-patch+json (RFC 7386), application/json-patch+json (RFC 6902: add, remove,
  replace, move, copy, test) and application/strategic-merge-patch+json (see _strategic_merge for the subset)
- authentication by client certificate (user = CN, groups = O) or bearer token (FakeApiServer.tokens); every
  authenticated user may do everything

As the apiserver does: storage is versioned by one global resourceVersion counter and every write is kept in
a per-resource history, which watches replay and LIST with resourceVersionMatch=Exact or a continue token
reads back in time until compact() forgets it (then 410 Expired, or for a watch an ERROR event with code 410
on a 200 stream). Pods are deleted gracefully (deletionTimestamp first, really removed by a DELETE with grace
period 0; a grace period of 0 still writes the deletionTimestamp before removing the pod). A status update
cannot change spec and a main-resource update cannot change status. A write that changes nothing is not
stored and bumps no resourceVersion. A UID in a PUT or PATCH body is a precondition (409 on mismatch).
Creating a pod applies the main API defaults (restartPolicy, dnsPolicy, terminationGracePeriodSeconds, ...)
and resets status to {"phase": "Pending"}. Pods have today's API's metadata.generation (1 on create, one more
for every spec change) and the pods/resize subresource of in-place resize (GET, PUT, PATCH: only the containers'
and sidecars' resources and resizePolicy change), which the v1.20 control plane of the other tests predates.

Not modelled: admission (no service-account volume, no priority, no namespace existence checks), validation
beyond metadata.name, managedFields, finalizers, qosClass, server-side apply, deletecollection.
As upstream, a strategic merge patch replaces lists whose Go field has no patchStrategy: a pod's
status.containerStatuses is replaced whole, not merged by name.

Faults for tests: faults (rules matched per request), compact(), drop_watches(), stall_watches(), set_down().
"""
import base64
import bisect
import calendar
import collections
import copy
import http.server
import json
import os
import random
import re
import secrets
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

Request = collections.namedtuple("Request", "method path status user")
"""One entry of FakeApiServer.requests: method, path with query, response status, user name (None if
unauthenticated)."""

Body = collections.namedtuple("Body", "method path content_type body")
"""One entry of FakeApiServer.request_bodies: a POST, PUT or PATCH body, parsed as JSON."""

_Event = collections.namedtuple("_Event", "rv type obj prev")  # one write in a resource's history
_User = collections.namedtuple("_User", "name groups")

_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"
_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of "
    "the results. Continuing with the provided token results in an inconsistent list - objects that were "
    "created, modified, or deleted between the time the first chunk was returned and now may show up in the "
    "list.")
_VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.2", "gitCommit": "0" * 40, "gitTreeState": "clean",
            "buildDate": "2026-10-27T00:00:00Z", "goVersion": "go1.26.8", "compiler": "gc",
            "platform": "linux/amd64"}
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json")


def _rfc3339(t=None):
    """A metav1.Time: RFC 3339 in UTC with second precision."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))


def _parse_rfc3339(s):
    return calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ"))


# ---------------------------------------------------------------------------------------------------------------
# Errors: every one is a v1 Status, worded as the apiserver words it.

class ApiError(Exception):
    """An API error; status is the v1 Status object sent to the client."""

    def __init__(self, status, headers=()):
        super().__init__(status.get("message"))
        self.status = status
        self.code = status["code"]
        self.headers = headers


def _status(code, reason, message, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message}
    if reason:
        st["reason"] = reason
    if details is not None:
        st["details"] = details
    st["code"] = code
    return st


def _details(kind, name, resource=True):
    """StatusDetails naming an object: kind is the resource (plural) for most errors, the Kind for Invalid."""
    d = {"name": name}
    if kind.group:
        d["group"] = kind.group
    d["kind"] = kind.resource if resource else kind.kind
    return d


def _not_found(kind, name):
    return ApiError(_status(404, "NotFound", f'{kind.qualified} "{name}" not found', _details(kind, name)))


def _already_exists(kind, name):
    return ApiError(_status(409, "AlreadyExists", f'{kind.qualified} "{name}" already exists', _details(kind, name)))


def _conflict(kind, name, why):
    return ApiError(_status(409, "Conflict", f'Operation cannot be fulfilled on {kind.qualified} "{name}": {why}',
                            _details(kind, name)))


def _uid_conflict(kind, ns, name, want, have):
    """A UID precondition failing in storage (PUT, PATCH): a Conflict wrapping the storage error."""
    return _conflict(kind, name, f"StorageError: invalid object, Code: 4, Key: {kind.etcd_key(ns, name)}, "
                                 f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: "
                                 f"{want}, UID in object meta: {have}")


def _invalid(kind, name, field, cause, message):
    details = _details(kind, name, resource=False)
    details["causes"] = [{"reason": cause, "message": message, "field": field}]
    return ApiError(_status(422, "Invalid", f'{kind.kind} "{name}" is invalid: {field}: {message}', details))


def _bad_request(message):
    return ApiError(_status(400, "BadRequest", message))


def _expired(message):
    return ApiError(_status(410, "Expired", message))


_NOT_FOUND_PATH = _status(404, "NotFound", "the server could not find the requested resource", {})
_METHOD_NOT_ALLOWED = _status(405, "MethodNotAllowed",
                              "the server does not allow this method on the requested resource", {})
_UNAUTHORIZED = _status(401, "Unauthorized", "Unauthorized")

# reason and default message of the errors that fault rules inject
_FAULTS = {400: ("BadRequest", "injected fault"), 401: ("Unauthorized", "Unauthorized"),
           403: ("Forbidden", "forbidden: injected fault"), 404: ("NotFound", "injected fault"),
           409: ("Conflict", "Operation cannot be fulfilled: " + _MODIFIED), 410: ("Expired", "injected fault"),
           422: ("Invalid", "injected fault"), 429: ("TooManyRequests", "Too many requests, please try again later."),
           500: ("InternalError", "Internal error occurred: injected fault"),
           503: ("ServiceUnavailable", "injected fault"), 504: ("Timeout", "injected fault")}


# ---------------------------------------------------------------------------------------------------------------
# The resources served.

# strategic merge patch: dotted field path -> merge key of that list ("" = a merged list of primitives); lists not
# named here are replaced, as for fields without a patchStrategy in the Go types
_META_SMP = {"metadata.ownerReferences": "uid", "metadata.finalizers": ""}
_CONTAINER_SMP = {"ports": "containerPort", "env": "name", "volumeMounts": "mountPath",
                  "volumeDevices": "devicePath"}
_POD_SMP = dict(_META_SMP, **{
    "spec.containers": "name", "spec.initContainers": "name", "spec.ephemeralContainers": "name",
    "spec.volumes": "name", "spec.imagePullSecrets": "name", "spec.hostAliases": "ip",
    "status.conditions": "type", "status.podIPs": "ip", "status.hostIPs": "ip",
    "status.resourceClaimStatuses": "name"},
    **{f"spec.{c}.{f}": k for c in ("containers", "initContainers", "ephemeralContainers")
       for f, k in _CONTAINER_SMP.items()})
_NODE_SMP = dict(_META_SMP, **{"spec.podCIDRs": "", "status.conditions": "type", "status.addresses": "type"})

# core/v1 Event field <-> events.k8s.io/v1 Event field
_EVENT_RENAMES = (("involvedObject", "regarding"), ("message", "note"), ("source", "deprecatedSource"),
                  ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
                  ("count", "deprecatedCount"), ("reportingComponent", "reportingController"))

_BOOL_FIELDS = {"spec.hostNetwork", "spec.unschedulable"}  # field selectors see a missing bool as "false"


class _Kind:
    """One served resource: URL plural, Kind, group/version, scope and behaviour. store names the object store;
    two kinds share a store when one is a conversion of the other (events.k8s.io events)."""

    def __init__(self, store, kind, group="", namespaced=True, fields=(), smp=None, status=False,
                 create_on_update=False, return_deleted=False, renames=(), etcd=None, bookmark=None):
        self.store = self.resource = store
        self.kind, self.group = kind, group
        self.api_version = f"{group}/v1" if group else "v1"
        self.qualified = f"{store}.{group}" if group else store  # as in error messages
        self.namespaced = namespaced
        # field selector label -> dotted path in the (wire) object
        self.fields = {"metadata.name": "metadata.name"}
        if namespaced:
            self.fields["metadata.namespace"] = "metadata.namespace"
        self.fields.update(dict(fields))
        self.smp = smp or _META_SMP
        self.status = status  # has a /status subresource
        self.create_on_update = create_on_update
        self.return_deleted = return_deleted  # DELETE answers with the object rather than a Success Status
        self._out = dict(renames)
        self._in = {v: k for k, v in renames}
        self._etcd = etcd or store
        self.bookmark = bookmark or {}

    def etcd_key(self, ns, name):
        return f"/registry/{self._etcd}/{ns}/{name}" if self.namespaced else f"/registry/{self._etcd}/{name}"

    def wire(self, obj, typed=True):
        """The stored object as this kind serves it; typed adds kind/apiVersion (list items have neither)."""
        body = {self._out.get(k, k): v for k, v in obj.items()} if self._out else obj
        return {"kind": self.kind, "apiVersion": self.api_version, **body} if typed else body

    def unwire(self, obj):
        """A client's object as stored (a deep copy, without kind/apiVersion)."""
        return copy.deepcopy({self._in.get(k, k): v for k, v in obj.items() if k not in ("kind", "apiVersion")})


_POD_FIELDS = {f: f for f in ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
                              "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName")}
_EVENT_FIELDS = dict({f"involvedObject.{f}": f"involvedObject.{f}" for f in
                      ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
                     reason="reason", reportingComponent="reportingComponent", source="source.component",
                     type="type")
_KINDS = [
    _Kind("pods", "Pod", fields=_POD_FIELDS, smp=_POD_SMP, status=True, return_deleted=True,
          bookmark={"spec": {"containers": None}, "status": {}}),
    _Kind("nodes", "Node", namespaced=False, fields={"spec.unschedulable": "spec.unschedulable"}, smp=_NODE_SMP,
          status=True, etcd="minions"),
    _Kind("leases", "Lease", group="coordination.k8s.io"),
    _Kind("events", "Event", fields=_EVENT_FIELDS, create_on_update=True),
    _Kind("events", "Event", group="events.k8s.io", create_on_update=True, renames=_EVENT_RENAMES,
          fields={f: f for f in ("reason", "type", "reportingController", "regarding.kind", "regarding.name",
                                 "regarding.namespace", "regarding.uid")}),
    _Kind("configmaps", "ConfigMap"),
    _Kind("secrets", "Secret", fields={"type": "type"}),
    _Kind("services", "Service", status=True),  # the kubelet's service environment variables read them
    _Kind("runtimeclasses", "RuntimeClass", group="node.k8s.io", namespaced=False),
]
_ROUTES = {(k.group, k.resource): k for k in _KINDS}
_STORES = {}  # store -> the kind the public methods use (the first listed; the others are conversions)
for _k in _KINDS:
    _STORES.setdefault(_k.store, _k)
_REVIEWS = {("authentication.k8s.io", "tokenreviews"): "TokenReview",
            ("authorization.k8s.io", "subjectaccessreviews"): "SubjectAccessReview"}
_GROUPS = sorted({k.group for k in _KINDS if k.group} | {g for g, _ in _REVIEWS})


# ---------------------------------------------------------------------------------------------------------------
# Selectors.

def _field_value(obj, path):
    v = obj
    for part in path.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "false" if path in _BOOL_FIELDS else ""
    return str(v)


def _field_selector(kind, text):
    """fieldSelector: comma-separated (AND) terms f=v, f==v, f!=v on the fields the kind supports."""
    reqs = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        m = re.fullmatch(r"([^=!]+?)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise _bad_request(f"invalid field selector: '{text}'; can't understand '{term}'")
        label, op, value = m.groups()
        if label not in kind.fields:
            raise _bad_request(f"field label not supported: {label}")
        reqs.append((kind.fields[label], op == "!=", value))
    return lambda obj: all((_field_value(obj, path) == value) != neg for path, neg, value in reqs)


_LABEL_TERM = re.compile(r"(!)?\s*([\w./-]+)\s*(?:(==|=|!=)\s*([\w.-]*)|\s(in|notin)\s*\(([^)]*)\))?")


def _label_test(neg, key, op, value, setop, values):
    if neg:
        return lambda labels: key not in labels
    if op:
        return lambda labels: (labels.get(key) == value) != (op == "!=")
    if setop:
        vals = {v.strip() for v in values.split(",")}
        if setop == "in":
            return lambda labels: labels.get(key) in vals
        return lambda labels: labels.get(key) not in vals
    return lambda labels: key in labels


def _label_selector(text):
    """labelSelector: k=v, k==v, k!=v, k, !k, k in (a,b), k notin (a,b), comma-separated (AND)."""
    tests = []
    for term in filter(None, (t.strip() for t in re.split(r",(?![^(]*\))", text))):
        m = _LABEL_TERM.fullmatch(term)
        if not m or (m[1] and (m[3] or m[5])):
            raise _bad_request(f"unable to parse requirement: {term}")
        tests.append(_label_test(*m.groups()))
    return lambda obj: all(t((obj.get("metadata") or {}).get("labels") or {}) for t in tests)


# ---------------------------------------------------------------------------------------------------------------
# Patches. Each returns a new object and leaves its input alone.

def _merge_patch(target, patch):
    """RFC 7386 JSON merge patch: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


def _strategic_merge(original, patch, schema, path=""):
    """Strategic merge patch, the subset kubelets and kubectl use:

    - maps merge recursively and null deletes a field, as in a JSON merge patch;
    - lists named in schema merge: lists of maps by their merge key (an element {key: k, "$patch": "delete"}
      removes k, an element {"$patch": "replace"} makes the patch's other elements the whole list), lists of
      primitives by union; every other list is replaced (node status images, pod containerStatuses, ...);
    - "$setElementOrder/<list>": the merged list follows that order, elements it does not name go last in
      their previous order;
    - "$deleteFromPrimitiveList/<list>": removes those values;
    - "$retainKeys": keeps only those fields of the map;
    - "$patch": "replace" on a map replaces it, "$patch": "delete" removes it.
    """
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strategic_merge({}, {k: v for k, v in patch.items() if k != "$patch"}, schema, path)
    if directive == "delete":
        return None
    out = dict(original) if isinstance(original, dict) else {}
    orders = {}
    for key, value in patch.items():
        sub = f"{path}.{key}" if path else key
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
        elif key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            out[field] = [v for v in out.get(field) or [] if v not in value]
        elif value is None:
            out.pop(key, None)
        elif isinstance(value, dict):
            merged = _strategic_merge(out.get(key), value, schema, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list) and sub in schema:
            out[key] = _merge_list(out.get(key), value, schema[sub], schema, sub)
        else:
            out[key] = copy.deepcopy(value)
    for field, order in orders.items():
        sub = f"{path}.{field}" if path else field
        if isinstance(out.get(field), list) and sub in schema:
            out[field] = _reorder(out[field], order, schema[sub])
    if "$retainKeys" in patch:
        out = {k: v for k, v in out.items() if k in patch["$retainKeys"]}
    return out


def _merge_list(original, patch, key, schema, path):
    out = list(original) if isinstance(original, list) else []
    if not key:  # a merged list of primitives
        return out + [copy.deepcopy(v) for v in patch if v not in out]
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [_strategic_merge({}, e, schema, path) for e in patch if e.get("$patch") != "replace"]
    for elem in patch:
        if not isinstance(elem, dict) or key not in elem:
            raise _bad_request(f"map: {elem} does not contain declared merge key: {key}")
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == elem[key]), None)
        if elem.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
        elif idx is None:
            out.append(_strategic_merge({}, elem, schema, path))
        else:
            out[idx] = _strategic_merge(out[idx], elem, schema, path)
    return out


def _reorder(items, order, key):
    def ident(e):
        return e.get(key) if key and isinstance(e, dict) else e
    rank = {ident(o): i for i, o in enumerate(order)}
    return (sorted((e for e in items if ident(e) in rank), key=lambda e: rank[ident(e)]) +
            [e for e in items if ident(e) not in rank])


class _PatchError(Exception):
    pass


def _pointer(p):
    """An RFC 6901 JSON pointer as a list of tokens."""
    if p == "":
        return []
    if not isinstance(p, str) or not p.startswith("/"):
        raise _PatchError(f"invalid JSON pointer {p!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in p[1:].split("/")]


def _child(node, token):
    if isinstance(node, dict) and token in node:
        return node[token]
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    raise _PatchError(f"path element {token!r} not found")


def _jp_get(doc, tokens):
    for t in tokens:
        doc = _child(doc, t)
    return doc


def _jp_add(doc, tokens, value):
    if not tokens:
        return value
    parent = _jp_get(doc, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        idx = len(parent) if last == "-" else int(last) if last.isdigit() else -1
        if not 0 <= idx <= len(parent):
            raise _PatchError(f"index {last!r} out of range")
        parent.insert(idx, value)
    else:
        raise _PatchError(f"cannot add under a {type(parent).__name__}")
    return doc


def _jp_remove(doc, tokens):
    if not tokens:
        raise _PatchError("cannot remove the whole document")
    parent = _jp_get(doc, tokens[:-1])
    _child(parent, tokens[-1])  # must exist
    del parent[int(tokens[-1]) if isinstance(parent, list) else tokens[-1]]
    return doc


def _json_patch(doc, ops):
    """RFC 6902 JSON patch: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise _bad_request("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    try:
        for op in ops:
            name, path = op.get("op"), _pointer(op.get("path"))
            if name == "add":
                doc = _jp_add(doc, path, copy.deepcopy(op["value"]))
            elif name == "remove":
                doc = _jp_remove(doc, path)
            elif name == "replace":
                _jp_get(doc, path)  # must exist
                doc = _jp_add(_jp_remove(doc, path) if path else doc, path, copy.deepcopy(op["value"]))
            elif name in ("move", "copy"):
                src = _pointer(op.get("from"))
                value = copy.deepcopy(_jp_get(doc, src))
                if name == "move":
                    doc = _jp_remove(doc, src)
                doc = _jp_add(doc, path, value)
            elif name == "test":
                if _jp_get(doc, path) != op.get("value"):
                    raise _PatchError(f"testing value {op.get('path')} failed")
            else:
                raise _PatchError(f"unexpected kind of operation: {name!r}")
    except (_PatchError, KeyError, AttributeError) as e:
        raise ApiError(_status(422, "Invalid", f"the server rejected our request due to an error in our request: "
                                               f"{e}", {}))
    return doc


# ---------------------------------------------------------------------------------------------------------------
# Certificates.

def _openssl(cwd, *args):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


class _Pki:
    """A throwaway CA issuing the server's and the clients' certificates (EC P-256)."""

    def __init__(self, d):
        os.makedirs(d, exist_ok=True)
        self.dir = d
        self.ca_crt, self.ca_key = os.path.join(d, "ca.crt"), os.path.join(d, "ca.key")
        _openssl(d, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", self.ca_key, "-out", self.ca_crt, "-days", "7", "-subj", "/CN=fakeapi-ca",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def issue(self, filename, cn, orgs=(), server=False, host="127.0.0.1"):
        """Issue a certificate; returns (crt, key) paths. A server certificate names the IP address host."""
        base = os.path.join(self.dir, filename)
        subject = "".join(f"/O={o}" for o in orgs) + f"/CN={cn}"
        _openssl(self.dir, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", base + ".key", "-out", base + ".csr", "-subj", subject)
        with open(base + ".ext", "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                    "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
            f.write(f"extendedKeyUsage=serverAuth\nsubjectAltName=IP:{host},DNS:localhost\n" if server
                    else "extendedKeyUsage=clientAuth\n")
        _openssl(self.dir, "x509", "-req", "-in", base + ".csr", "-CA", self.ca_crt, "-CAkey", self.ca_key,
                 "-set_serial", "0x" + secrets.token_hex(8), "-days", "7", "-extfile", base + ".ext",
                 "-out", base + ".crt")
        return base + ".crt", base + ".key"


# ---------------------------------------------------------------------------------------------------------------
# HTTP plumbing.

class _Conn:
    """An accepted TLS connection, kept so that stop(), set_down() and drop_watches() can cut it."""

    def __init__(self, sock):
        self.sock = sock
        self.watching = False
        self.cut = False

    def abort(self):
        """Cut the TCP connection under TLS: no close_notify, no final chunk."""
        self.cut = True
        try:
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)
        except OSError:
            pass


class _HTTPServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, api, port):
        self.api = api
        super().__init__((api.host, port), _Handler)

    def server_bind(self):  # without HTTPServer's getfqdn()
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def finish_request(self, request, client_address):
        # the TLS handshake runs here, on the connection's own thread, not in the accept loop
        request.settimeout(10)
        try:
            tls = self.api._tls.wrap_socket(request, server_side=True)
        except OSError:
            return
        tls.settimeout(None)
        conn = _Conn(tls)
        try:
            if self.api._register(self, conn):
                self.RequestHandlerClass(tls, client_address, self)
        finally:
            self.api._unregister(conn)
            tls.close()

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], OSError):  # a client going away is not an error
            super().handle_error(request, client_address)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        self.server.api._serve(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def log_message(self, format, *args):
        pass


def _read_body(h):
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        data = b""
        while True:
            size = int(h.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return data
            data += h.rfile.read(size)
            h.rfile.readline()
    length = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(length) if length else b""


def _chunk(h, data):
    h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def _event_line(ev_type, obj):
    return json.dumps({"type": ev_type, "object": obj}, separators=(",", ":")).encode() + b"\n"


class _Target:
    """What a request path names."""

    def __init__(self, endpoint, kind=None, ns=None, name=None, sub=None, watch=False, gv=None):
        self.endpoint, self.kind, self.ns, self.name, self.sub, self.watch, self.gv = \
            endpoint, kind, ns, name, sub, watch, gv


def _resolve(path):
    """Map a request path to a _Target; unknown paths raise 404."""
    if path in ("/healthz", "/livez", "/readyz"):
        return _Target("health")
    if path in ("/version", "/api", "/apis"):
        return _Target(path[1:])
    parts = path.strip("/").split("/")
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3 and parts[2] == "v1" and parts[1] in _GROUPS:
        group, rest = parts[1], parts[3:]
    else:
        raise ApiError(_NOT_FOUND_PATH)
    if not rest:
        return _Target("discovery", gv=group)
    watch = rest[0] == "watch"
    if watch:
        rest = rest[1:]
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3 or "" in rest:
        raise ApiError(_NOT_FOUND_PATH)
    resource, name, sub = (rest + [None, None])[:3]
    if (group, resource) in _REVIEWS and ns is None and name is None and not watch:
        return _Target("review", gv=group, name=_REVIEWS[(group, resource)])
    if (group, resource, sub) == ("", "serviceaccounts", "token") and ns and not watch:
        return _Target("token", ns=ns, name=name)
    kind = _ROUTES.get((group, resource))
    if (kind is None or (ns is not None and not kind.namespaced) or (watch and name is not None)
            or (sub is not None and not (sub == "status" and kind.status)
                                and not (sub == "resize" and resource == "pods"))):
        raise ApiError(_NOT_FOUND_PATH)
    return _Target("resource", kind, ns, name, sub, watch)


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _default_sar(spec):
    """The default SubjectAccessReview answer: what RBAC gives a bare cluster (only system:masters)."""
    if "system:masters" in (spec.get("groups") or []):
        return True, ('RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" '
                      'to Group "system:masters"')
    return False, ""


def _default_pod(pod):
    """The defaults the apiserver gives a pod on create; status restarts as Pending."""
    spec = pod.setdefault("spec", {})
    for field, value in (("restartPolicy", "Always"), ("terminationGracePeriodSeconds", 30),
                         ("dnsPolicy", "ClusterFirst"), ("schedulerName", "default-scheduler"),
                         ("securityContext", {}), ("enableServiceLinks", True)):
        spec.setdefault(field, value)
    for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
        image = c.get("image", "")
        last = image.rsplit("/", 1)[-1]
        latest = "@" not in last and (":" not in last or last.endswith(":latest"))
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        for port in c.get("ports") or []:
            port.setdefault("protocol", "TCP")
    pod["status"] = {"phase": "Pending"}


def _okey(obj):
    """The store key of a stored object."""
    meta = obj["metadata"]
    return meta.get("namespace", ""), meta["name"]


def _key_str(key):
    """A store key as its etcd key suffix, which orders lists and continue tokens."""
    return f"{key[0]}/{key[1]}" if key[0] else key[1]


def _set_or_pop(d, key, value):
    if value is None:
        d.pop(key, None)
    else:
        d[key] = value


# ---------------------------------------------------------------------------------------------------------------

class FakeApiServer:
    """The fake kube-apiserver. start() it, point ckubelet at .kubeconfig, stop() it.

    State lives in memory behind one lock; the public methods below read and write it as the API would
    (bumping resourceVersions and feeding watches). Knobs a test may set at any time: faults, tokens, sar_rules,
    bookmark_interval, max_watch_seconds."""

    def __init__(self, workdir, node_name="testnode", host="127.0.0.1"):
        self.workdir = workdir
        self.node_name = node_name
        self.host = host  # the IPv4 address it listens on (in the network namespace of the thread calling start())
        os.makedirs(workdir, exist_ok=True)
        self.url = self.kubeconfig = self.ca_file = self.client_cert = None
        self.port = 0
        # fault rules, first match wins: {"method", "path_re" (re.search on the path), "query_re", "status",
        # "message", "delay" (seconds, before answering), "count" (requests it applies to; absent: all)}
        self.faults = []
        self.requests = []  # Request tuples, in order of response
        self.request_bodies = []  # Body tuples
        self.reviews = []  # TokenReview and SubjectAccessReview responses
        self.tokens = {}  # bearer token -> (user name, [groups])
        self.sar_rules = _default_sar  # (SubjectAccessReview spec) -> (allowed, reason)
        self.bookmark_interval = 1.0  # seconds without events before a BOOKMARK, when the watch allows them
        self.max_watch_seconds = None  # caps every watch's timeoutSeconds
        self._cond = threading.Condition()  # the one lock; notified on every change
        self._rv = 1  # the last resourceVersion given
        self._horizon = 0  # compact(): resourceVersions older than this are forgotten
        self._objects = {store: {} for store in _STORES}  # store -> key -> object (never mutated in place)
        self._history = {store: ([], []) for store in _STORES}  # store -> (resourceVersions, _Events)
        self._conns = {}  # TLS socket -> _Conn
        self._stalled = False
        self._httpd = None
        self._tls = None
        self._pki = None
        self._kubeconfigs = 0

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def start(self):
        """Make the PKI, listen on self.host (a free port) and write the node's kubeconfig."""
        self._pki = _Pki(os.path.join(self.workdir, "pki"))
        self.ca_file = self._pki.ca_crt
        server_cert = self._pki.issue("server", "fakeapi", server=True, host=self.host)
        self.client_cert = self._pki.issue("node", f"system:node:{self.node_name}", ["system:nodes"])
        self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._tls.load_cert_chain(*server_cert)
        self._tls.load_verify_locations(self.ca_file)
        self._tls.verify_mode = ssl.CERT_OPTIONAL
        self._tls.set_alpn_protocols(["http/1.1"])
        self._listen(0)
        self.url = f"https://{self.host}:{self.port}"
        self.kubeconfig = self._write_kubeconfig(f"system:node:{self.node_name}", [
            ("client-certificate", self.client_cert[0]), ("client-key", self.client_cert[1])])

    def stop(self):
        """Close the listener and every open connection, watches included."""
        self.set_down(True)

    def set_down(self, on):
        """Down: close the listener (connections are refused) and every open connection. Up: listen again on the
        same port."""
        if on:
            with self._cond:
                srv, self._httpd = self._httpd, None
                conns = list(self._conns.values())
                self._cond.notify_all()
            if srv is not None:
                srv.shutdown()
                srv.server_close()
            for conn in conns:
                conn.abort()
        elif self._httpd is None:
            self._listen(self.port)

    def _listen(self, port):
        srv = _HTTPServer(self, port)
        self.port = srv.server_address[1]
        with self._cond:
            self._httpd = srv
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                         name=f"fakeapi:{self.port}").start()

    def _register(self, srv, conn):
        with self._cond:
            if srv is not self._httpd:  # accepted just before the listener closed
                return False
            self._conns[conn.sock] = conn
            return True

    def _unregister(self, conn):
        with self._cond:
            self._conns.pop(conn.sock, None)

    # ---- credentials -----------------------------------------------------------------------------------------

    def issue_cert(self, cn, orgs=()):
        """A client certificate signed by the fake's CA: (crt, key) paths."""
        return self._pki.issue(re.sub(r"[^\w.-]", "_", cn), cn, orgs)

    def kubeconfig_token(self, token):
        """Write a kubeconfig that authenticates with a bearer token (valid if in self.tokens); returns its path."""
        return self._write_kubeconfig("token-user", [("token", token)])

    def _write_kubeconfig(self, user, credentials):
        self._kubeconfigs += 1
        path = os.path.join(self.workdir, "kubeconfig" if self._kubeconfigs == 1 else
                            f"kubeconfig-{self._kubeconfigs}")
        q = json.dumps  # a JSON string is a YAML double-quoted scalar
        lines = ["apiVersion: v1", "kind: Config", "clusters:", "- name: fakeapi", "  cluster:",
                 f"    server: {q(self.url)}", f"    certificate-authority: {q(self.ca_file)}",
                 "users:", f"- name: {q(user)}", "  user:"]
        lines += [f"    {k}: {q(v)}" for k, v in credentials]
        lines += ["contexts:", "- name: fakeapi", "  context:", "    cluster: fakeapi", f"    user: {q(user)}",
                  "current-context: fakeapi"]
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    # ---- state, for the tests --------------------------------------------------------------------------------

    def create(self, resource, obj, namespace=None):
        """Create as POST does (uid, creationTimestamp, defaults); raises ApiError. Returns the stored object."""
        kind = self._kind(resource)
        with self._cond:
            return copy.deepcopy(kind.wire(self._create(kind, namespace, obj)))

    def get(self, resource, name, namespace=None):
        kind = self._kind(resource)
        with self._cond:
            obj = self._objects[kind.store].get(self._key(kind, namespace, name))
            return copy.deepcopy(kind.wire(obj)) if obj else None

    def list(self, resource, namespace=None):
        kind = self._kind(resource)
        with self._cond:
            items = sorted(self._objects[kind.store].items(), key=lambda kv: _key_str(kv[0]))
            return [copy.deepcopy(kind.wire(o)) for k, o in items if namespace is None or k[0] == namespace]

    def update(self, resource, obj):
        """Write obj (spec and status) over the stored object, whatever its resourceVersion; system metadata
        (uid, creationTimestamp, deletion) is kept. Raises ApiError (404). Returns the stored object."""
        kind = self._kind(resource)
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or "default" if kind.namespaced else None
        with self._cond:
            return copy.deepcopy(kind.wire(self._update(kind, ns, meta.get("name"), obj, force=True)[0]))

    def delete(self, resource, name, namespace=None, grace_seconds=None):
        """Delete as DELETE does (pods gracefully). Returns the pod if it is still there (terminating), else
        None; raises ApiError (404)."""
        kind = self._kind(resource)
        with self._cond:
            obj, gone = self._delete(kind, namespace, name, grace_seconds, {})
            return None if gone else copy.deepcopy(kind.wire(obj))

    def pod(self, name, namespace="default"):
        return self.get("pods", name, namespace)

    def resize(self, name, patch, namespace="default"):
        """A strategic merge patch through pods/resize, as `kubectl patch --subresource resize` sends it. Raises
        ApiError. Returns the stored pod."""
        kind = self._kind("pods")
        with self._cond:
            return copy.deepcopy(kind.wire(self._patch(kind, namespace, name,
                                                       "application/strategic-merge-patch+json", patch, "resize")))

    def compact(self):
        """Forget the history: older resourceVersions now give 410 Expired (an ERROR event on a watch)."""
        with self._cond:
            self._horizon = self._rv

    def drop_watches(self):
        """Cut every open watch connection abruptly."""
        with self._cond:
            for conn in self._conns.values():
                if conn.watching:
                    conn.abort()
            self._cond.notify_all()

    def stall_watches(self, on):
        """While on, watches stay open and send nothing: no events, no bookmarks, no end."""
        with self._cond:
            self._stalled = on
            self._cond.notify_all()

    def wait(self, predicate, timeout=30, msg="condition"):
        """Poll predicate() until it returns something truthy, and return it; AssertionError after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out after {timeout}s waiting for {msg}")
            with self._cond:
                self._cond.wait(min(0.05, left))

    @staticmethod
    def _kind(resource):
        if resource not in _STORES:
            raise ValueError(f"unknown resource {resource!r}; one of {sorted(_STORES)}")
        return _STORES[resource]

    # ---- storage (callers hold the lock) ---------------------------------------------------------------------

    @staticmethod
    def _key(kind, ns, name):
        return (ns or "default", name) if kind.namespaced else ("", name)

    def _commit(self, kind, ev_type, key, obj, prev):
        """Store one write under a new resourceVersion, append it to the history and wake the watches."""
        self._rv += 1
        obj = copy.deepcopy(obj)
        obj.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
        if ev_type == "DELETED":
            del self._objects[kind.store][key]
        else:
            self._objects[kind.store][key] = obj
        rvs, events = self._history[kind.store]
        rvs.append(self._rv)
        events.append(_Event(self._rv, ev_type, obj, prev))
        self._cond.notify_all()
        return obj

    def _create(self, kind, ns, body):
        obj = kind.unwire(body)
        meta = obj.setdefault("metadata", {})
        if kind.namespaced:
            if ns and meta.get("namespace") and meta["namespace"] != ns:
                raise _bad_request("the namespace of the provided object does not match the namespace sent on "
                                   "the request")
            meta["namespace"] = ns or meta.get("namespace") or "default"
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise _invalid(kind, "", "metadata.name", "FieldValueRequired",
                               "Required value: name or generateName is required")
            meta["name"] = meta["generateName"] + "".join(random.choices("bcdfghjklmnpqrstvwxz2456789", k=5))
        if meta.get("resourceVersion"):
            raise ApiError(_status(500, None, "resourceVersion should not be set on objects to be created"))
        key = self._key(kind, meta.get("namespace"), meta["name"])
        if key in self._objects[kind.store]:
            raise _already_exists(kind, meta["name"])
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = _rfc3339()
        meta.pop("deletionTimestamp", None)
        meta.pop("deletionGracePeriodSeconds", None)
        if kind.store == "pods":
            _default_pod(obj)
            meta["generation"] = 1  # pods have a generation (podObservedGenerationTracking, 1.33+)
        return self._commit(kind, "ADDED", key, obj, None)

    def _update(self, kind, ns, name, body, sub=None, force=False):
        """PUT (sub None or "status"). force is the tests' update(): no preconditions, spec and status both
        written. Returns (stored object, created)."""
        key = self._key(kind, ns, name)
        old = self._objects[kind.store].get(key)
        new = kind.unwire(body)
        meta = new.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise _bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                               f"({name})")
        if kind.namespaced and meta.get("namespace", key[0]) != key[0]:
            raise _bad_request("the namespace of the provided object does not match the namespace sent on the "
                               "request")
        if old is None:
            if kind.create_on_update and not force:
                return self._create(kind, key[0], body), True
            raise _not_found(kind, name)
        old_meta = old["metadata"]
        if not force:
            if meta.get("uid") and meta["uid"] != old_meta["uid"]:
                raise _uid_conflict(kind, key[0], name, meta["uid"], old_meta["uid"])
            if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta["resourceVersion"]:
                raise _conflict(kind, name, _MODIFIED)
        meta["name"] = name
        for field in ("namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
            _set_or_pop(meta, field, old_meta.get(field))
        if sub == "resize" and kind.store == "pods" and not force:
            # pods/resize (InPlacePodVerticalScaling, GA in 1.35): only the containers' resources and resizePolicy
            # (regular containers and sidecars) change; everything else stays as it was
            spec = copy.deepcopy(old.get("spec") or {})
            for field in ("containers", "initContainers"):
                wanted = {c.get("name"): c for c in (new.get("spec") or {}).get(field) or []}
                for c in spec.get(field) or []:
                    w = wanted.get(c.get("name"))
                    if w is None or (field == "initContainers" and c.get("restartPolicy") != "Always"):
                        continue
                    for k in ("resources", "resizePolicy"):
                        _set_or_pop(c, k, w.get(k))
            new = copy.deepcopy(old)
            new["spec"] = spec
            meta = new["metadata"]
        elif kind.status and not force:
            if sub == "status":  # the status endpoint cannot change spec (nor, for pods, ownerReferences)
                _set_or_pop(new, "spec", old.get("spec"))
                if kind.store == "pods":
                    _set_or_pop(meta, "ownerReferences", old_meta.get("ownerReferences"))
            else:  # and the main endpoint cannot change status
                _set_or_pop(new, "status", old.get("status"))
        if new == old:  # a no-op write is not stored
            return old, False
        if kind.store == "pods" and new.get("spec") != old.get("spec") and "generation" in meta:
            meta["generation"] = old_meta.get("generation", 1) + 1  # a spec change is a new generation
        return self._commit(kind, "MODIFIED", key, new, old), False

    def _patch(self, kind, ns, name, content_type, patch, sub):
        old = self._objects[kind.store].get(self._key(kind, ns, name))
        if old is None:
            raise _not_found(kind, name)
        current = kind.wire(old)
        if content_type == "application/json-patch+json":
            new = _json_patch(current, patch)
        elif not isinstance(patch, dict):
            raise _bad_request("the patch must be a JSON object")
        elif content_type == "application/merge-patch+json":
            new = _merge_patch(current, patch)
        else:
            new = _strategic_merge(current, patch, kind.smp)
        if not isinstance(new, dict):
            raise _bad_request("the patched object is not a JSON object")
        return self._update(kind, ns, name, new, sub)[0]

    def _delete(self, kind, ns, name, grace, preconditions):
        """DELETE. Returns (object, gone): the object as last stored, and whether it was really removed."""
        key = self._key(kind, ns, name)
        old = self._objects[kind.store].get(key)
        if old is None:
            raise _not_found(kind, name)
        meta = old["metadata"]
        for field, label, tail in (("uid", "UID", "deleted and then recreated"),
                                   ("resourceVersion", "ResourceVersion", "modified")):
            want = preconditions.get(field)
            if want and want != meta[field]:
                raise ApiError(_status(409, "Conflict", (
                    f'Operation cannot be fulfilled on {kind.kind} "{name}": the {label} in the precondition '
                    f"({want}) does not match the {label} in record ({meta[field]}). The object might have been "
                    f"{tail}"), _details(kind, name, resource=False)))
        if kind.store != "pods":
            return self._commit(kind, "DELETED", key, old, old), True
        now = time.time()
        current = meta.get("deletionGracePeriodSeconds")
        if "deletionTimestamp" in meta:
            if current and (grace is None or grace >= current):
                return old, False  # a graceful deletion is pending: only a shorter grace period changes it
            if current:  # shorten it: the deletionTimestamp moves back, never into the past
                start = _parse_rfc3339(meta["deletionTimestamp"]) - current
                old = self._mark_deleted(kind, key, old, max(start + grace, now), grace)
        else:
            period = grace if grace is not None else (old.get("spec") or {}).get("terminationGracePeriodSeconds", 0)
            if not (old.get("spec") or {}).get("nodeName") or \
                    (old.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                period = 0  # unscheduled or terminated: nothing to wait for
            period = 1 if period < 0 else period
            old = self._mark_deleted(kind, key, old, now + period, period)
        if old["metadata"].get("deletionGracePeriodSeconds"):
            return old, False
        return self._commit(kind, "DELETED", key, old, old), True

    def _mark_deleted(self, kind, key, old, when, grace):
        new = copy.deepcopy(old)
        new["metadata"]["deletionTimestamp"] = _rfc3339(when)
        new["metadata"]["deletionGracePeriodSeconds"] = grace
        return self._commit(kind, "MODIFIED", key, new, old)

    def _state_at(self, store, rv):
        """The objects of a store as they were at resourceVersion rv (undoing the later history)."""
        state = dict(self._objects[store])
        rvs, events = self._history[store]
        for ev in reversed(events[bisect.bisect_right(rvs, rv):]):
            if ev.type == "ADDED":
                del state[_okey(ev.obj)]
            else:
                state[_okey(ev.prev)] = ev.prev
        return state

    def _await_rv(self, rv):
        """A request for a resourceVersion newer than the newest waits up to 3 s for it, then gets 504."""
        if not self._cond.wait_for(lambda: self._rv >= rv, timeout=3):
            raise ApiError(_status(504, "Timeout", f"Too large resource version: {rv}, current: {self._rv}", {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1}))

    # ---- HTTP ------------------------------------------------------------------------------------------------

    def _serve(self, h):
        """Answer one request (BaseHTTPRequestHandler h)."""
        url = urllib.parse.urlsplit(h.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        user = None
        try:
            raw = _read_body(h)
            user = self._authenticate(h)
            if user is None:
                raise ApiError(_UNAUTHORIZED)
            target = _resolve(url.path)
            content_type = h.headers.get("Content-Type", "").split(";")[0].strip().lower()
            body = self._parse_body(h, raw, content_type)
            self._fault(h.command, url.path, url.query, target)
            answer = self._dispatch(h, target, query, body, content_type, user)
            if answer is not None:
                self._reply(h, *answer, user)
        except ApiError as e:
            self._reply(h, e.code, e.status, user, e.headers)
        except OSError:
            h.close_connection = True
        except Exception as e:
            traceback.print_exc()
            self._reply(h, 500, _status(500, "InternalError", f"Internal error occurred: {e}",
                                        {"causes": [{"message": str(e)}]}), user)

    def _authenticate(self, h):
        """The user of a verified client certificate (CN, O groups), else of a known bearer token, else None."""
        cert = h.connection.getpeercert()
        if cert:
            attrs = [attr for rdn in cert.get("subject", ()) for attr in rdn]
            cn = next((v for k, v in attrs if k == "commonName"), None)
            if cn:
                return _User(cn, [v for k, v in attrs if k == "organizationName"] + ["system:authenticated"])
        auth = h.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            with self._cond:
                entry = self.tokens.get(auth[len("Bearer "):].strip())
            if entry:
                return _User(entry[0], list(entry[1]) + ["system:authenticated"])
        return None

    def _parse_body(self, h, raw, content_type):
        if not raw:
            return None
        try:
            body = json.loads(raw)
        except ValueError as e:
            raise _bad_request(f"error decoding body: {e}")
        if h.command in ("POST", "PUT", "PATCH"):
            with self._cond:
                self.request_bodies.append(Body(h.command, h.path, content_type, body))
        return body

    def _fault(self, method, path, query, target):
        """Apply the first fault rule matching this request, if any (consuming one of its count)."""
        with self._cond:
            rule = next((r for r in self.faults if r.get("method", method).upper() == method and
                         re.search(r.get("path_re", ""), path) and re.search(r.get("query_re", ""), query)), None)
            if rule is None:
                return
            if "count" in rule:
                rule["count"] -= 1
                if rule["count"] <= 0:
                    self.faults.remove(rule)
        if rule.get("delay"):
            time.sleep(rule["delay"])
        code = rule.get("status")
        if code:
            reason, message = _FAULTS.get(code, ("InternalError", "injected fault"))
            details = None
            if code == 409 and target.kind and target.name:
                message = f'Operation cannot be fulfilled on {target.kind.qualified} "{target.name}": {_MODIFIED}'
                details = _details(target.kind, target.name)
            headers = [("Retry-After", "1")] if code in (429, 503) else []
            raise ApiError(_status(code, reason, rule.get("message", message), details), headers)

    def _reply(self, h, code, payload, user, headers=()):
        """Send a whole response: JSON (dict) or text (str), with Content-Length, and log the request."""
        if isinstance(payload, str):
            data, ctype = payload.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = json.dumps(payload, separators=(",", ":")).encode(), "application/json"
        self._log(h, code, user)
        h.send_response(code)
        self._common_headers(h, ctype)
        for name, value in headers:
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def _common_headers(h, ctype):
        h.send_header("Audit-Id", str(uuid.uuid4()))
        h.send_header("Cache-Control", "no-cache, private")
        h.send_header("Content-Type", ctype)

    def _log(self, h, code, user):
        with self._cond:
            self.requests.append(Request(h.command, h.path, code, user.name if user else None))
            self._cond.notify_all()

    def _dispatch(self, h, t, query, body, content_type, user):
        """Serve a resolved request; returns (code, payload) or None when the response was streamed."""
        method = h.command
        if t.endpoint in ("health", "version", "api", "apis", "discovery"):
            if method != "GET":
                raise ApiError(_METHOD_NOT_ALLOWED)
            return 200, self._discovery(t)
        if t.endpoint in ("review", "token"):
            if method != "POST":
                raise ApiError(_METHOD_NOT_ALLOWED)
            if t.endpoint == "token":
                return 201, self._token_request(t.ns, t.name, body or {})
            return 201, self._review(t.name, t.gv, body or {})
        kind = t.kind
        if t.name is None:
            if method == "GET":
                if t.watch or query.get("watch") in ("true", "1"):
                    return self._watch(h, kind, t.ns, query, user)
                return 200, self._list(kind, t.ns, query)
            if method == "POST" and (t.ns or not kind.namespaced):
                with self._cond:
                    return 201, kind.wire(self._create(kind, t.ns, body or {}))
            raise ApiError(_METHOD_NOT_ALLOWED)
        with self._cond:
            if method == "GET":
                obj = self._objects[kind.store].get(self._key(kind, t.ns, t.name))
                if obj is None:
                    raise _not_found(kind, t.name)
                return 200, kind.wire(obj)
            if method == "PUT":
                obj, created = self._update(kind, t.ns, t.name, body or {}, t.sub)
                return (201 if created else 200), kind.wire(obj)
            if method == "PATCH":
                if content_type not in _PATCH_TYPES:
                    raise ApiError(_status(415, "UnsupportedMediaType", (
                        "the body of the request was in an unknown format - accepted media types include: "
                        + ", ".join(_PATCH_TYPES)), {}))
                return 200, kind.wire(self._patch(kind, t.ns, t.name, content_type, body, t.sub))
            if method == "DELETE" and t.sub is None:
                options = body or {}
                grace = options.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
                obj, _ = self._delete(kind, t.ns, t.name, None if grace is None else int(grace),
                                      options.get("preconditions") or {})
                if kind.return_deleted:
                    return 200, kind.wire(obj)
                details = _details(kind, t.name)
                details["uid"] = obj["metadata"]["uid"]
                return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                             "details": details}
        raise ApiError(_METHOD_NOT_ALLOWED)

    def _discovery(self, t):
        if t.endpoint == "health":
            return "ok"
        if t.endpoint == "version":
            return _VERSION
        if t.endpoint == "api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": f"{self.host}:{self.port}"}]}
        if t.endpoint == "apis":
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": g, "versions": [{"groupVersion": f"{g}/v1", "version": "v1"}],
                 "preferredVersion": {"groupVersion": f"{g}/v1", "version": "v1"}} for g in _GROUPS]}
        group = t.gv
        verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
        resources = []
        for k in _KINDS:
            if k.group == group:
                resources.append({"name": k.resource, "singularName": k.kind.lower(), "namespaced": k.namespaced,
                                  "kind": k.kind, "verbs": verbs})
                if k.status:
                    resources.append({"name": f"{k.resource}/status", "singularName": "", "namespaced": k.namespaced,
                                      "kind": k.kind, "verbs": ["get", "patch", "update"]})
        for (g, resource), kind in _REVIEWS.items():
            if g == group:
                resources.append({"name": resource, "singularName": kind.lower(), "namespaced": False,
                                  "kind": kind, "verbs": ["create"]})
        if not group:
            resources.append({"name": "serviceaccounts/token", "singularName": "", "namespaced": True,
                              "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
                              "verbs": ["create"]})
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/v1" if group else "v1",
                "resources": resources}

    def _review(self, kind_name, group, body):
        spec = body.get("spec") or {}
        if kind_name == "TokenReview":
            with self._cond:
                entry = self.tokens.get(spec.get("token", ""))
            status = {"user": {}}
            if entry:
                status = {"authenticated": True, "user": {
                    "username": entry[0], "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, entry[0])),
                    "groups": list(entry[1]) + ["system:authenticated"]},
                    "audiences": spec.get("audiences") or [_AUDIENCE]}
        else:
            allowed, reason = self.sar_rules(spec)
            status = {"allowed": bool(allowed)}
            if reason:
                status["reason"] = reason
        review = {"kind": kind_name, "apiVersion": f"{group}/v1", "metadata": {"creationTimestamp": None},
                  "spec": spec, "status": status}
        with self._cond:
            self.reviews.append(review)
        return review

    def _token_request(self, ns, sa, body):
        """TokenRequest: a JWT-shaped token for the service account, which then authenticates as it."""
        spec = dict(body.get("spec") or {})
        expiry = spec.get("expirationSeconds") or 3600
        if expiry < 600:
            kind = _Kind("serviceaccounts", "TokenRequest", group="authentication.k8s.io")
            raise _invalid(kind, sa, "spec.expirationSeconds", "FieldValueInvalid",
                           f"Invalid value: {expiry}: may not specify a duration less than 10 minutes")
        spec["expirationSeconds"] = expiry
        spec.setdefault("audiences", [_AUDIENCE])
        spec.setdefault("boundObjectRef", None)
        now = int(time.time())
        user = f"system:serviceaccount:{ns}:{sa}"
        claims = {"aud": spec["audiences"], "exp": now + expiry, "iat": now, "iss": _AUDIENCE, "nbf": now,
                  "sub": user, "kubernetes.io": {"namespace": ns, "serviceaccount": {
                      "name": sa, "uid": str(uuid.uuid5(uuid.NAMESPACE_OID, user))}}}
        ref = spec["boundObjectRef"] or {}
        if ref.get("kind") == "Pod":
            claims["kubernetes.io"]["pod"] = {"name": ref.get("name"), "uid": ref.get("uid")}
        token = ".".join(_b64url(json.dumps(part).encode()) for part in ({"alg": "RS256", "kid": "fakeapi"}, claims))
        token += "." + _b64url(secrets.token_bytes(32))
        with self._cond:
            self.tokens[token] = (user, ["system:serviceaccounts", f"system:serviceaccounts:{ns}"])
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": sa, "namespace": ns, "creationTimestamp": None}, "spec": spec,
                "status": {"token": token, "expirationTimestamp": _rfc3339(now + expiry)}}

    @staticmethod
    def _selector(kind, ns, query):
        """The filter of a list or watch: namespace, fieldSelector and labelSelector, on the wire object."""
        fields = _field_selector(kind, query.get("fieldSelector", ""))
        labels = _label_selector(query.get("labelSelector", ""))

        def match(obj):
            wire = kind.wire(obj, typed=False)
            return (ns is None or obj["metadata"].get("namespace") == ns) and fields(wire) and labels(wire)
        return match

    @staticmethod
    def _int_param(value, what="resource version"):
        try:
            return int(value)
        except ValueError:
            raise _bad_request(f"invalid {what}: {value}")

    def _list(self, kind, ns, query):
        match = self._selector(kind, ns, query)
        rv, cont = query.get("resourceVersion", ""), query.get("continue", "")
        limit = self._int_param(query.get("limit") or "0", "limit")
        start = ""
        with self._cond:
            if cont:
                try:
                    token = json.loads(base64.b64decode(cont))
                    snapshot, start = int(token["rv"]), token["start"]
                except (ValueError, KeyError, TypeError):
                    raise _bad_request("continue key is not valid: incorrect encoded start resourceVersion "
                                       "(version meta.k8s.io/v1)")
                if snapshot < self._horizon:
                    raise _expired(_CONTINUE_EXPIRED)
                objects = self._state_at(kind.store, snapshot)
            elif rv and query.get("resourceVersionMatch") == "Exact":
                snapshot = self._int_param(rv)
                self._await_rv(snapshot)
                if snapshot < self._horizon:
                    raise _expired("The resourceVersion for the provided list is too old.")
                objects = self._state_at(kind.store, snapshot)
            else:
                if rv:
                    self._await_rv(self._int_param(rv))
                snapshot, objects = self._rv, self._objects[kind.store]
            items = sorted((_key_str(k), o) for k, o in objects.items() if _key_str(k) >= start and match(o))
        meta = {"resourceVersion": str(snapshot)}
        if limit and len(items) > limit:
            rest = len(items) - limit
            items = items[:limit]
            meta["continue"] = base64.b64encode(json.dumps(
                {"v": "meta.k8s.io/v1", "rv": snapshot, "start": items[-1][0] + "\x00"}).encode()).decode()
            if not query.get("fieldSelector") and not query.get("labelSelector"):
                meta["remainingItemCount"] = rest
        return {"kind": f"{kind.kind}List", "apiVersion": kind.api_version, "metadata": meta,
                "items": [kind.wire(o, typed=False) for _, o in items]}

    def _watch(self, h, kind, ns, query, user):
        """Stream a watch: chunked, one JSON event per line and per chunk."""
        match = self._selector(kind, ns, query)
        rv = query.get("resourceVersion", "")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        if self.max_watch_seconds is not None:
            timeout = min(timeout or self.max_watch_seconds, self.max_watch_seconds)
        deadline = time.monotonic() + timeout if timeout else float("inf")
        expired = None
        initial = []
        with self._cond:
            if rv in ("", "0"):  # the current objects as ADDED, then the changes
                cursor = self._rv
                initial = [("ADDED", o) for _, o in sorted((_key_str(k), o) for k, o in
                                                           self._objects[kind.store].items()) if match(o)]
            else:
                cursor = self._int_param(rv)
                self._await_rv(cursor)
                if cursor < self._horizon:
                    expired = _status(410, "Expired", f"too old resource version: {cursor} ({self._horizon})")
            conn = self._conns.get(h.connection)
            conn.watching = True
        self._log(h, 200, user)
        h.send_response(200)
        self._common_headers(h, "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        if expired:
            _chunk(h, _event_line("ERROR", expired))
            h.wfile.write(b"0\r\n\r\n")
            return None
        for ev_type, obj in initial:
            _chunk(h, _event_line(ev_type, kind.wire(obj)))
        last_sent = time.monotonic()
        while True:
            with self._cond:
                batch = self._next_events(kind, conn, match, cursor, deadline, bookmarks, last_sent)
                if batch is None:  # cut: end without the final chunk
                    return None
                events, cursor = batch
            if not events:  # timed out: end cleanly
                h.wfile.write(b"0\r\n\r\n")
                return None
            for ev_type, obj in events:
                _chunk(h, _event_line(ev_type, obj))
            last_sent = time.monotonic()

    def _next_events(self, kind, conn, match, cursor, deadline, bookmarks, last_sent):
        """Wait (holding the lock) for what a watch sends next: (events, new cursor); no events means the watch
        timed out; None means its connection was cut."""
        while True:
            if conn.cut:
                return None
            now = time.monotonic()
            if self._stalled:
                self._cond.wait(1)
                continue
            events, cursor = self._pending(kind, cursor, match)
            if events or now >= deadline:
                return events, cursor
            if bookmarks and now - last_sent >= self.bookmark_interval:
                mark = {"kind": kind.kind, "apiVersion": kind.api_version,
                        "metadata": {"resourceVersion": str(self._rv), "creationTimestamp": None}, **kind.bookmark}
                return [("BOOKMARK", mark)], cursor
            wake = min(deadline, last_sent + self.bookmark_interval) if bookmarks else deadline
            self._cond.wait(min(1.0, max(0.01, wake - now)))

    def _pending(self, kind, cursor, match):
        """The history after cursor as a filtered watch sees it: an object entering the filter is ADDED, one
        leaving it DELETED (its previous state, at the new resourceVersion), as the watch cache does."""
        rvs, history = self._history[kind.store]
        events = []
        for ev in history[bisect.bisect_right(rvs, cursor):]:
            now_ok = ev.type != "DELETED" and match(ev.obj)
            before_ok = ev.prev is not None and match(ev.prev)
            if now_ok:
                events.append(("MODIFIED" if before_ok else "ADDED", kind.wire(ev.obj)))
            elif before_ok:
                gone = kind.wire(ev.prev)
                gone["metadata"] = dict(gone["metadata"], resourceVersion=str(ev.rv))
                events.append(("DELETED", gone))
        return events, max(cursor, rvs[-1]) if rvs else cursor
