#!/usr/bin/env python3
"""Inventory of Kubernetes generated.proto messages vs k8s-openapi 0.29 types.

Usage: inventory.py <k8s minor e.g. 37> <staging version e.g. v0.37.1> [--fields] [--json out]
Reads the .proto files from the Go module cache and k8s-openapi from the cargo registry.
Analysis helper only (our own code); the real generator lives in kclient-codegen.
"""
import glob, json, os, re, sys
from collections import defaultdict, Counter

GOMOD = os.path.expanduser("~/go/pkg/mod/k8s.io")
K8S_OPENAPI = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/k8s-openapi-0.29.0/src"))[0]
MODULES = ["api", "apimachinery", "apiextensions-apiserver", "kube-aggregator"]

FIELD_RE = re.compile(r"^\s*(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;\s*$")
MAP_RE = re.compile(r"^\s*map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;\s*$")

def parse_proto(path):
    pkg, msgs, cur, comments = None, {}, None, []
    for lineno, line in enumerate(open(path), 1):
        s = line.strip()
        if s.startswith("//"):
            comments.append(s[2:].strip()); continue
        if not s:
            comments = [] if cur is None else comments; continue
        m = re.match(r"^package\s+([\w.]+);", s)
        if m: pkg = m.group(1); comments = []; continue
        m = re.match(r"^message\s+(\w+)\s*\{$", s)
        if m:
            assert cur is None, (path, lineno)
            cur = m.group(1); msgs[cur] = {"fields": [], "line": lineno, "file": path}; comments = []; continue
        if s == "}":
            cur = None; comments = []; continue
        m = FIELD_RE.match(s)
        if m and cur:
            label, typ, name, num = m.groups()
            msgs[cur]["fields"].append(dict(label=label, type=typ, name=name, number=int(num), map=None,
                                            optional_marker="+optional" in comments, line=lineno))
            comments = []; continue
        m = MAP_RE.match(s)
        if m and cur:
            k, v, name, num = m.groups()
            msgs[cur]["fields"].append(dict(label="map", type=v, name=name, number=int(num), map=(k, v),
                                            optional_marker="+optional" in comments, line=lineno))
            comments = []; continue
        if s.startswith(("syntax", "import", "option")) or s.startswith("/*") or s.startswith("*/") or cur is None:
            comments = []; continue
        raise SystemExit(f"unparsed {path}:{lineno}: {s}")
    return pkg, msgs

def load_protos(version):
    out = {}
    for mod in MODULES:
        for f in sorted(glob.glob(f"{GOMOD}/{mod}@{version}/**/generated.proto", recursive=True)):
            pkg, msgs = parse_proto(f)
            for name, m in msgs.items():
                m["package"] = pkg
                m["rel"] = os.path.relpath(f, GOMOD)
                out[f"{pkg}.{name}"] = m
    return out

def proto_to_definition(full):
    # k8s.io.api.core.v1.Pod -> io.k8s.api.core.v1.Pod ; apiextensions_apiserver -> apiextensions-apiserver
    rest = full[len("k8s.io."):]
    rest = rest.replace("apiextensions_apiserver", "apiextensions-apiserver").replace("kube_aggregator", "kube-aggregator")
    return "io.k8s." + rest

def load_openapi(minor):
    root = f"{K8S_OPENAPI}/v1_{minor}"
    defs = {}
    for f in glob.glob(f"{root}/**/*.rs", recursive=True):
        text = open(f).read()
        m = re.match(r"// Generated from definition (\S+)", text)
        if not m: continue
        d = {"file": os.path.relpath(f, K8S_OPENAPI), "fields": {}, "json": {}}
        sm = re.search(r"^pub struct (\w+)\s*\{\n(.*?)^\}", text, re.S | re.M)
        tm = re.search(r"^pub struct (\w+)\((.*)\);", text, re.M)
        em = re.search(r"^pub enum (\w+)", text, re.M)
        if sm:
            d["kind"], d["rust"] = "struct", sm.group(1)
            for fm in re.finditer(r"^    pub (\w+): (.*),$", sm.group(2), re.M):
                d["fields"][fm.group(1)] = fm.group(2)
            for jm in re.finditer(r'^\s*"([^"]+)" => Field::Key_(\w+),', text, re.M):
                if jm.group(1) not in ("apiVersion", "kind") or jm.group(2) in d["fields"]:
                    d["json"][jm.group(1)] = jm.group(2)
            d["resource"] = "impl crate::Resource for" in text
        elif tm:
            d["kind"], d["rust"], d["inner"] = "newtype", tm.group(1), tm.group(2)
        elif em:
            d["kind"], d["rust"] = "enum", em.group(1)
        else:
            d["kind"], d["rust"] = "other", None
        defs[m.group(1)] = d
    return defs

def norm(json_name):
    s = json_name.lstrip("$")
    return re.sub(r"-(\w)", lambda m: m.group(1).upper(), s).lower()

def resolve(pkg, typ):
    return typ[1:] if typ.startswith(".") else f"{pkg}.{typ}"

def flat_names(protos, full, jn):
    """The JSON-side names a proto message contributes to a k8s-openapi struct whose JSON
    names are `jn`: its own fields, and those of any message field it inlines (Go `json:",inline"`),
    recursively."""
    out = set()
    for f in protos[full]["fields"]:
        n, t = norm(f["name"]), resolve(protos[full]["package"], f["type"])
        if n in jn or t not in protos:
            out.add(n)
        else:
            out |= flat_names(protos, t, jn)
    return out

def main():
    minor, version = sys.argv[1], sys.argv[2]
    protos, defs = load_protos(version), load_openapi(minor)
    per_pkg = Counter(); matched_pkg = Counter()
    only_proto, field_issues, renames, inlines = [], [], [], []
    for full, m in sorted(protos.items()):
        per_pkg[m["package"]] += 1
        d = defs.get(proto_to_definition(full))
        if d is None:
            only_proto.append(full); continue
        matched_pkg[m["package"]] += 1
        if d["kind"] == "struct":
            jn = {norm(j): (j, r) for j, r in d["json"].items()}
            pnames = set()
            inl = []
            for f in m["fields"]:
                n = norm(f["name"])
                if n in jn:
                    pnames.add(n)
                    if jn[n][0] != f["name"]:
                        renames.append(f"{full}.{f['name']} <-> json {jn[n][0]} / rust {jn[n][1]}")
                    continue
                t = resolve(m["package"], f["type"])
                if t in protos and flat_names(protos, t, jn) <= set(jn):
                    inl.append(f"{full}.{f['name']} (#{f['number']}) inlines {t}")
                    stack = [t]
                    while stack:
                        x = stack.pop()
                        for g in protos[x]["fields"]:
                            gn = norm(g["name"])
                            if gn in jn: pnames.add(gn)
                            else:
                                gt = resolve(protos[x]["package"], g["type"])
                                if gt in protos: stack.append(gt)
                    continue
                field_issues.append(f"{full}.{f['name']} (#{f['number']}): no k8s-openapi field")
            inlines.extend(inl)
            for n, (j, r) in jn.items():
                if n not in pnames:
                    field_issues.append(f"{full}: k8s-openapi field {r} (json {j}) has no proto field")
    proto_defs = {proto_to_definition(p) for p in protos}
    only_openapi = sorted(k for k, d in defs.items() if k not in proto_defs)
    total = sum(per_pkg.values()); matched = sum(matched_pkg.values())
    print(f"# Kubernetes 1.{minor} ({version}): {len(set(m['rel'] for m in protos.values()))} files, {total} messages, {matched} with a k8s-openapi type, {len(only_proto)} without; k8s-openapi definitions {len(defs)}, {len(only_openapi)} without a proto message")
    if "--pkgs" in sys.argv:
        for p in sorted(per_pkg):
            print(f"  {p}: {per_pkg[p]} messages, {matched_pkg[p]} matched")
    if "--only" in sys.argv:
        print("## proto only"); [print("  " + x) for x in only_proto]
        print("## k8s-openapi only"); [print("  " + x, defs[x]["kind"], defs[x]["file"]) for x in only_openapi]
    if "--fields" in sys.argv:
        print("## field issues"); [print("  " + x) for x in field_issues]
        print("## renames"); [print("  " + x) for x in renames]
        print("## inlines"); [print("  " + x) for x in inlines]
    if "--json" in sys.argv:
        out = sys.argv[sys.argv.index("--json") + 1]
        json.dump({"protos": protos, "defs": defs}, open(out, "w"), indent=1, default=str)

main()
