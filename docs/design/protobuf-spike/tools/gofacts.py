"""Joins proto fields with their Go struct fields (types.go tags) and k8s-openapi fields."""
import sys, re, os, glob, collections
src = open("inventory.py").read().replace("\nmain()\n", "\n")
ns = {}; exec(compile(src, "inventory.py", "exec"), ns)
GOMOD = ns["GOMOD"]

STRUCT_RE = re.compile(r"^type (\w+) struct \{\s*$")
FIELD_RE = re.compile(r"^\t(?:(\w+)\s+)?([^\s`]+)\s+`(.*)`\s*(//.*)?$")
TAG_RE = re.compile(r'(\w+):"([^"]*)"')

def go_structs(pkgdir):
    out = {}
    for f in sorted(glob.glob(f"{pkgdir}/*.go")):
        if f.endswith("_test.go") or f.endswith("generated.pb.go"): continue
        cur = None
        for lineno, line in enumerate(open(f), 1):
            m = STRUCT_RE.match(line)
            if m: cur = m.group(1); out.setdefault(cur, {}); continue
            if cur and line.startswith("}"): cur = None; continue
            if cur:
                m = FIELD_RE.match(line.rstrip("\n"))
                if not m: continue
                name, typ, tags = m.group(1), m.group(2), dict(TAG_RE.findall(m.group(3)))
                if "protobuf" not in tags: continue
                pb = tags["protobuf"].split(",")
                pname = next((p[5:] for p in pb if p.startswith("name=")), None)
                out[cur][pname] = dict(go_name=name or typ.split(".")[-1].lstrip("*"), go_type=typ, embedded=name is None,
                                       json=tags.get("json", ""), pb=tags["protobuf"], file=os.path.relpath(f, GOMOD), line=lineno)
    return out

def pkgdir_of(rel):
    return os.path.dirname(os.path.join(GOMOD, rel))

if __name__ == "__main__":
    minor, version = sys.argv[1], sys.argv[2]
    protos, defs = ns["load_protos"](version), ns["load_openapi"](minor)
    cache, missing, shapes = {}, [], collections.Counter()
    examples = {}
    for full, m in protos.items():
        d = pkgdir_of(m["rel"])
        if d not in cache: cache[d] = go_structs(d)
        st = cache[d].get(full.rsplit(".", 1)[1])
        for f in m["fields"]:
            g = (st or {}).get(f["name"])
            if g is None:
                missing.append(f"{full}.{f['name']}"); continue
            t = g["go_type"]
            shape = ("ptr" if t.startswith("*") else "slice" if t.startswith("[]") else "map" if t.startswith("map[") else "value")
            pclass = "scalar" if f["type"] in ("string","int32","int64","bool","double","float","bytes","uint32","uint64","sint32","sint64","fixed32","fixed64") else "message"
            if f["type"] == "bytes" and t == "[]byte": shape = "bytes"
            omit = "omitempty" in g["json"] or "omitzero" in g["json"]
            inline = ",inline" in g["json"]
            key = (f["label"], pclass, shape, "omitempty" if omit else "", "inline" if inline else "")
            shapes[key] += 1
            examples.setdefault(key, f"{full}.{f['name']} :: {t} `json:\"{g['json']}\"` ({g['file']}:{g['line']})")
    print("fields without a Go field found:", len(missing), missing[:10])
    for k, v in sorted(shapes.items(), key=lambda kv: -kv[1]):
        print(f"{v:5d} {k}  e.g. {examples[k]}")
