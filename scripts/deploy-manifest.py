#!/usr/bin/python3
"""Checks that the Kubernetes manifest agrees with the image and the CLI.

    deploy-manifest.py check BINARY MANIFEST...
        Every YAML document parses; the DaemonSet's image is the one scripts/build-image.sh
        tags; its commands use the binary where deploy/container/Containerfile installs it,
        as the image's user, with the capabilities the binary's file capabilities name; the
        ConfigMap's tripcap.toml passes `tripcap check`; the container's args and every
        probe command are accepted by this tripcap's CLI (exit 0 or 1, never a usage error).
    deploy-manifest.py probe DIR MANIFEST
        Writes what scripts/build-image.sh --test needs to run the DaemonSet's probe in the
        image: DIR/config/ (the ConfigMap), DIR/config-lo/ (the same with its interfaces
        swapped for loopback), DIR/probe.argv, DIR/config.mountpath, DIR/out.mountpath,
        DIR/interfaces.

Uses Debian's python3-yaml (PyYAML). Prints one line per check; exits 1 on the first failure.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTAINERFILE = os.path.join(ROOT, "deploy/container/Containerfile")
BUILD_IMAGE = os.path.join(ROOT, "scripts/build-image.sh")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def ok(msg):
    print(f"ok: {msg}")


def load(paths):
    docs = []
    for p in paths:
        try:
            with open(p) as f:
                docs += [(p, d) for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            fail(f"{p} does not parse as YAML: {e}")
        ok(f"{p} parses")
    return docs


def containerfile():
    """What the runtime stage promises: binary path, user, file capabilities."""
    text = open(CONTAINERFILE).read().replace("\\\n", " ")
    runtime = text.split("\nFROM ")[-1]
    entry = re.search(r'^ENTRYPOINT \["([^"]+)"\]', runtime, re.M)
    user = re.search(r"^USER (\d+)(?::(\d+))?", runtime, re.M)
    caps = re.search(r"setcap ([a-z_,]+)\+p\b", runtime)
    if not (entry and user and caps):
        fail(f"{CONTAINERFILE}: no ENTRYPOINT, USER uid or setcap in the runtime stage")
    names = sorted(c.upper().removeprefix("CAP_") for c in caps.group(1).split(","))
    return entry.group(1), int(user.group(1)), names


def image_name():
    text = open(BUILD_IMAGE).read()
    m = re.search(r"^IMAGE=\$\{TRIPCAP_IMAGE:-([^}]+)\}", text, re.M)
    if not m:
        fail(f"{BUILD_IMAGE}: no IMAGE=${{TRIPCAP_IMAGE:-…}} default")
    version = re.search(r'^version = "([^"]+)"', open(os.path.join(ROOT, "Cargo.toml")).read(), re.M)
    return f"{m.group(1)}:{version.group(1)}"


def parts(docs):
    ds = [d for _, d in docs if d.get("kind") == "DaemonSet"]
    cms = [d for _, d in docs if d.get("kind") == "ConfigMap"]
    if len(ds) != 1 or len(cms) != 1:
        fail(f"want one DaemonSet and one ConfigMap, found {len(ds)} and {len(cms)}")
    spec = ds[0]["spec"]["template"]["spec"]
    main = [c for c in spec["containers"] if c["name"] == "tripcap"]
    if len(main) != 1:
        fail("the DaemonSet has no container named tripcap")
    return spec, main[0], cms[0]


def mount_of(container, spec, kind):
    """(mountPath, volume) of the container's first mount whose volume has `kind`."""
    vols = {v["name"]: v for v in spec.get("volumes", [])}
    for m in container.get("volumeMounts", []):
        v = vols.get(m["name"], {})
        if kind in v:
            return m["mountPath"], v
    fail(f"container {container['name']} mounts no {kind} volume")


def probes(container):
    out = []
    for name in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = container.get(name)
        if p:
            cmd = p.get("exec", {}).get("command")
            if not cmd:
                fail(f"{name} is not an exec probe")
            out.append((name, cmd))
    if not out:
        fail("the tripcap container has no probes")
    return out


def config_text(cm):
    text = cm.get("data", {}).get("tripcap.toml")
    if not text:
        fail("the ConfigMap has no tripcap.toml")
    return text


def localize(argv, config_mount, config_dir, binary):
    """The probe's argv run by BINARY against a local copy of the config."""
    return [binary] + [a.replace(config_mount, config_dir) for a in argv[1:]]


def run(argv, ok_codes):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if r.returncode not in ok_codes:
        fail(f"`{shlex.join(argv)}` exited {r.returncode}: {(r.stderr or r.stdout).strip()}")
    return r


def check(binary, manifests):
    docs = load(manifests)
    spec, main, cm = parts(docs)
    entry, uid, caps = containerfile()
    want = image_name()
    for c in spec.get("initContainers", []) + spec["containers"]:
        if c.get("image") != want:
            fail(f"container {c['name']} runs {c.get('image')!r}, scripts/build-image.sh tags {want!r}")
    ok(f"every container runs {want}, the tag scripts/build-image.sh builds")
    if not spec.get("hostNetwork"):
        fail("hostNetwork is not set: the agent would not see the node's NICs")
    sc = main.get("securityContext", {})
    if sc.get("runAsUser") != uid:
        fail(f"runAsUser is {sc.get('runAsUser')}, the image's USER is {uid}")
    added = sorted(sc.get("capabilities", {}).get("add", []))
    if added != caps:
        fail(f"capabilities.add is {added}, the binary's file capabilities are {caps}")
    if sc.get("allowPrivilegeEscalation") is False:
        fail("allowPrivilegeEscalation: false sets no_new_privs, which voids file capabilities")
    ok(f"runs as {uid} with {', '.join(caps)} (the image's user and file capabilities)")
    limits = main.get("resources", {}).get("limits", {})
    if not any(k.startswith("rdma/") for k in limits):
        fail("no RDMA device plugin resource (rdma/…) in limits: the sniffer cannot open /dev/infiniband")
    if sc.get("readOnlyRootFilesystem"):
        if "/tmp" not in [m["mountPath"] for m in main.get("volumeMounts", [])]:
            fail("readOnlyRootFilesystem without a /tmp mount: selftest's burst needs one")
    config_mount, _ = mount_of(main, spec, "configMap")
    with tempfile.TemporaryDirectory() as tmp:
        cdir = os.path.join(tmp, "config")
        os.mkdir(cdir)
        out = os.path.join(tmp, "out")
        text = config_text(cm)
        # The node's paths are not this machine's: the output directory goes to a
        # temporary one, so the checks below write nothing outside it.
        text = re.sub(r'^dir = ".*"$', f'dir = "{out}"', text, flags=re.M)
        with open(os.path.join(cdir, "tripcap.toml"), "w") as f:
            f.write(text)
        args = main.get("args", [])
        if main.get("command") not in (None, [entry]):
            fail(f"the container overrides the entrypoint with {main.get('command')}")
        if not args or args[0] != "run":
            fail(f"the container's args are {args}, want `run …`")
        # `check` takes every option `run` takes and captures nothing.
        run(localize([entry, "check"] + args[1:], config_mount, cdir, binary), (0,))
        ok(f"`tripcap {shlex.join(args)}`: the config and flags pass `tripcap check`")
        for name, cmd in probes(main):
            if cmd[0] != entry:
                fail(f"{name} runs {cmd[0]}, the image installs {entry}")
            r = run(localize(cmd, config_mount, cdir, binary), (0, 1))
            if "selftest" in cmd and "config" not in r.stdout:
                fail(f"{name}: no selftest table in its output: {r.stdout}")
            ok(f"{name} `{shlex.join(cmd)}` is accepted by the CLI (exit {r.returncode} here)")


def probe(dest, manifests):
    docs = load(manifests)
    spec, main, cm = parts(docs)
    config_mount, _ = mount_of(main, spec, "configMap")
    out_mount, _ = mount_of(main, spec, "hostPath")
    text = config_text(cm)
    ifaces = re.search(r"^interfaces = \[(.*)\]$", text, re.M)
    if not ifaces:
        fail("the ConfigMap's tripcap.toml has no one-line `interfaces = [...]`")
    names = re.findall(r'"([^"]+)"', ifaces.group(1))
    for sub, body in (("config", text), ("config-lo", text.replace(ifaces.group(0), 'interfaces = ["lo"]'))):
        os.makedirs(os.path.join(dest, sub), exist_ok=True)
        with open(os.path.join(dest, sub, "tripcap.toml"), "w") as f:
            f.write(body)
    name, cmd = probes(main)[0]
    with open(os.path.join(dest, "probe.argv"), "w") as f:
        f.write("\n".join(cmd) + "\n")
    for fname, value in (("config.mountpath", config_mount), ("out.mountpath", out_mount),
                         ("interfaces", "\n".join(names))):
        with open(os.path.join(dest, fname), "w") as f:
            f.write(value + "\n")
    ok(f"{name} `{shlex.join(cmd)}` and the ConfigMap written to {dest}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "probe":
        probe(sys.argv[2], sys.argv[3:])
    else:
        print(__doc__)
        sys.exit(2)
