"""Classifies every field of every proto message that has a k8s-openapi type into the emitter
rule it needs (DESIGN.md §b), from the three-way join proto / Go types.go / k8s-openapi.
   rules.py <minor> <version> [--dump Msg ...] [--examples]"""
import sys, re, collections
src = open("inventory.py").read().replace("\nmain()\n", "\n")
ns = {}; exec(compile(src, "inventory.py", "exec"), ns)
g = {}; exec(compile(open("gofacts.py").read().replace('if __name__ == "__main__":', "if False:"), "gofacts.py", "exec"), g)

SCALARS = {"string", "int32", "int64", "bool", "double", "float", "bytes"}
SPECIAL = {  # proto message -> codec kind (hand-written runtime)
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "micro_time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "fields_v1",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "raw_extension",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": "json",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "int_or_string",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "quantity",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "or_array",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "or_bool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "or_string_array",
}

def short(t):
    t = re.sub(r"crate::[\w:]+::", "", t)
    for p in ("std::collections::", "std::vec::", "std::string::", "std::boxed::"):
        t = t.replace(p, "")
    return t

def classify(protos, defs, gostructs, full):
    m = protos[full]; d = defs[ns["proto_to_definition"](full)]
    jn = {ns["norm"](j): r for j, r in d["json"].items()}
    st = gostructs(m)
    out = []
    for f in m["fields"]:
        n = ns["norm"](f["name"]); gf = st.get(f["name"])
        t = ns["resolve"](m["package"], f["type"]) if f["type"] not in SCALARS else f["type"]
        if n not in jn:
            out.append((f, "inline", None, gf)); continue
        rf = jn[n]; rt = d["fields"][rf]
        opt = rt.startswith("Option<")
        if gf is None: shape, omit = "?", False
        else:
            gt = gf["go_type"]
            shape = "ptr" if gt.startswith("*") else "slice" if gt.startswith("[]") else "map" if gt.startswith("map[") else "value"
            omit = "omitempty" in gf["json"] or "omitzero" in gf["json"]
        if f["label"] == "map":
            v = ns["resolve"](m["package"], f["map"][1]) if f["map"][1] not in SCALARS else f["map"][1]
            vd = defs.get(ns["proto_to_definition"](v)) if v not in SCALARS else None
            if v in SCALARS: rule = f"map<string,{v}>"
            elif v in SPECIAL: rule = f"map<string,{SPECIAL[v]}>"
            elif vd is None and "Vec<" in rt: rule = "map<string,slice-wrapper>"
            else: rule = "map<string,message>"
        elif f["label"] == "repeated":
            if t in SCALARS: rule = f"repeated {t}"
            elif t in SPECIAL: rule = f"repeated {SPECIAL[t]}"
            else: rule = "repeated message"
        elif t in SCALARS:
            if t == "bytes": rule = "bytes-" + ("omitempty" if omit else "nil-checked")
            elif shape == "ptr": rule = "scalar-pointer"
            elif opt and omit: rule = "scalar-value-omitempty"
            elif opt: rule = "scalar-value-option"
            else: rule = "scalar-value"
        elif t in SPECIAL:
            rule = f"special:{SPECIAL[t]}-" + ("pointer" if shape == "ptr" else "value")
        elif ns["proto_to_definition"](t) not in defs and "Vec<" in rt:
            rule = "slice-wrapper-message"
        else:
            rule = "message-" + ("pointer" if shape == "ptr" else "value") + ("" if opt else "-required")
        out.append((f, rule, (rf, rt), gf))
    return out

if __name__ == "__main__":
    minor, version = sys.argv[1], sys.argv[2]
    protos, defs = ns["load_protos"](version), ns["load_openapi"](minor)
    cache = {}
    names = {id(v): k for k, v in protos.items()}
    def gostructs(m):
        dd = g["pkgdir_of"](m["rel"])
        if dd not in cache: cache[dd] = g["go_structs"](dd)
        return cache[dd].get(names[id(m)].rsplit(".", 1)[1], {})
    if "--dump" in sys.argv:
        for full in sys.argv[sys.argv.index("--dump") + 1:]:
            m = protos[full]
            print(f"== {full}  ({m['rel']}:{m['line']})  k8s-openapi {defs[ns['proto_to_definition'](full)]['file']}")
            for f, rule, rust, gf in sorted(classify(protos, defs, gostructs, full), key=lambda x: x[0]["number"]):
                typ = f"map<{f['map'][0]},{f['map'][1].split('.')[-1]}>" if f["map"] else f["type"].split(".")[-1]
                go = f"{gf['go_type']} `{gf['json']}`" if gf else "?"
                rs = f"{rust[0]}: {short(rust[1])}" if rust else "(inlined into parent)"
                print(f"  {f['number']:>3} {f['label']:8} {typ:22} {f['name']:30} go {go:58} rust {rs:60} => {rule}")
        sys.exit()
    counts, ex = collections.Counter(), {}
    for full in protos:
        if ns["proto_to_definition"](full) not in defs or defs[ns["proto_to_definition"](full)]["kind"] != "struct": continue
        for f, rule, rust, gf in classify(protos, defs, gostructs, full):
            counts[rule] += 1; ex.setdefault(rule, f"{full.replace('k8s.io.','')}.{f['name']}")
    for r, c in counts.most_common():
        print(f"{c:5d}  {r:36s} e.g. {ex[r]}")
