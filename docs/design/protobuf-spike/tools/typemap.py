import sys, re, collections
src = open("inventory.py").read().replace("\nmain()\n", "\n")
ns = {}; exec(compile(src, "inventory.py", "exec"), ns)
minor, version = sys.argv[1], sys.argv[2]
protos, defs = ns["load_protos"](version), ns["load_openapi"](minor)
p2d, norm, resolve = ns["proto_to_definition"], ns["norm"], ns["resolve"]
combos = collections.defaultdict(list)
def short(t):
    t = t.replace("std::collections::BTreeMap", "BTreeMap").replace("std::vec::Vec", "Vec").replace("std::string::String", "String").replace("std::boxed::Box","Box")
    return re.sub(r"crate::[\w:]+::(\w+)", r"\1", t)
for full, m in sorted(protos.items()):
    d = defs.get(p2d(full))
    if not d or d["kind"] != "struct": continue
    jn = {norm(j): r for j, r in d["json"].items()}
    for f in m["fields"]:
        r = jn.get(norm(f["name"]))
        if r is None: continue
        rt = short(d["fields"][r])
        pt = f["type"]
        if f["map"]: pt = f"map<{f['map'][0]},{f['map'][1]}>"
        pt = re.sub(r"^\.k8s\.io\.[\w.]+\.(\w+)$", r"\1", pt)
        if pt[0].isupper() and not pt.startswith(("Time","MicroTime","Quantity","IntOrString","RawExtension","FieldsV1","JSON","Duration")) and "map<" not in pt:
            pt = "<Message>"; rt = re.sub(r"\b(?!Option|Vec|Box|BTreeMap|String)[A-Z]\w*", "<T>", rt)
        if "map<" in pt:
            pt = re.sub(r",[A-Z]\w*>", ",<Message>>", pt); rt = re.sub(r"\b(?!Option|Vec|Box|BTreeMap|String|ByteString)[A-Z]\w*", "<T>", rt)
        key = (f["label"], pt, rt, f["optional_marker"])
        combos[key].append(f"{full.split('k8s.io.')[-1]}.{f['name']}")
for k, v in sorted(combos.items(), key=lambda kv: -len(kv[1])):
    print(f"{len(v):5d}  {k[0]:8s} {k[1]:32s} {k[2]:50s} +optional={k[3]}  e.g. {v[0]}")
