import hashlib, io, json, os, sys, tarfile, time
def blob(d, data):
    h = hashlib.sha256(data).hexdigest()
    os.makedirs(f"{d}/blobs/sha256", exist_ok=True)
    open(f"{d}/blobs/sha256/{h}", "wb").write(data)
    return {"digest": "sha256:" + h, "size": len(data)}
def layer():
    bio = io.BytesIO()
    with tarfile.open(fileobj=bio, mode="w", format=tarfile.PAX_FORMAT) as t:
        for dname in ["bin", "tmp", "etc", "proc", "sys", "dev"]:
            ti = tarfile.TarInfo(dname); ti.type = tarfile.DIRTYPE; ti.mode = 0o1777 if dname=="tmp" else 0o755; t.addfile(ti)
        data = open("/bin/busybox", "rb").read()
        ti = tarfile.TarInfo("bin/busybox"); ti.size = len(data); ti.mode = 0o755; t.addfile(ti, io.BytesIO(data))
        for n in ["sh","sleep","echo","cat","true","false","nc","httpd","wget","ls","env","date","kill","ps","trap","touch","mkdir","printf","test","[","grep","rm","mv","head","tail","tr","wc","sed","id","chmod","ln","dd","seq","sort","uname","hostname","stat","tar"]:
            ti = tarfile.TarInfo("bin/"+n); ti.type = tarfile.SYMTYPE; ti.linkname = "busybox"; t.addfile(ti)
        pw = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        ti = tarfile.TarInfo("etc/passwd"); ti.size = len(pw); ti.mode = 0o644; t.addfile(ti, io.BytesIO(pw))
    return bio.getvalue()
out, refs = sys.argv[1], sys.argv[2:]
d = out + ".dir"
os.makedirs(d, exist_ok=True)
L = layer(); ld = blob(d, L); ld["mediaType"] = "application/vnd.oci.image.layer.v1.tar"
manifests = []
for ref in refs:
    ref, _, ep = ref.partition("=")
    cfg = {"architecture": "amd64", "os": "linux", "config": {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], "Cmd": ["sh"]},
           "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(L).hexdigest()]}}
    if ep: cfg["config"]["Entrypoint"] = ep.split(",")
    cd = blob(d, json.dumps(cfg).encode()); cd["mediaType"] = "application/vnd.oci.image.config.v1+json"
    m = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": cd, "layers": [ld]}
    md = blob(d, json.dumps(m).encode()); md["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    md["annotations"] = {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref}
    manifests.append(md)
open(f"{d}/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": manifests}))
open(f"{d}/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
with tarfile.open(out, "w") as t:
    t.add(d, arcname=".")
