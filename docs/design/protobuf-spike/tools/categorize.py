import sys, re, importlib.util, collections
spec = importlib.util.spec_from_file_location("inv", "inventory.py")
src = open("inventory.py").read().replace("\nmain()\n", "\n")
ns = {}; exec(compile(src, "inventory.py", "exec"), ns)
minor, version = sys.argv[1], sys.argv[2]
protos, defs = ns["load_protos"](version), ns["load_openapi"](minor)
p2d = ns["proto_to_definition"]
def_pkgs = {d.rsplit(".", 1)[0] for d in defs}
cats = collections.defaultdict(list)
for full, m in sorted(protos.items()):
    d = p2d(full)
    if d in defs: continue
    pkg = d.rsplit(".", 1)[0]
    if full.endswith("List") and d[:-4] in defs: cats["list"].append(full)
    elif pkg not in def_pkgs: cats["gv-absent"].append(full)
    else: cats["other"].append(full)
print({k: len(v) for k, v in cats.items()})
gvs = collections.Counter(f.rsplit(".", 1)[0] for f in cats["gv-absent"])
print("group-versions without any k8s-openapi type:", dict(gvs))
print("other:"); [print("  ", x, [ (f['label'], f['type'], f['name']) for f in protos[x]['fields']][:4]) for x in cats["other"]]
only = sorted(k for k in defs if k not in {p2d(p) for p in protos})
print("k8s-openapi only:", only)
print("== matched non-struct k8s-openapi types:")
for full, m in sorted(protos.items()):
    d = defs.get(p2d(full))
    if d and d["kind"] != "struct":
        print("  ", full, d["kind"], d.get("inner", ""), [(f['label'], f['type'], f['name'], f['number']) for f in m['fields']])
print("== resources:", sum(1 for full in protos if defs.get(p2d(full), {}).get("resource")))
