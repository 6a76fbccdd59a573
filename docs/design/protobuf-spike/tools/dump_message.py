"""Prints the three-way join (proto / Go / k8s-openapi) of given messages, e.g.
   dump_message.py 37 v0.37.1 k8s.io.api.core.v1.ConfigMap k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"""
import sys
src = open("inventory.py").read().replace("\nmain()\n", "\n")
ns = {}; exec(compile(src, "inventory.py", "exec"), ns)
g = {}; exec(compile(open("gofacts.py").read().replace('if __name__ == "__main__":', "if False:"), "gofacts.py", "exec"), g)
minor, version = sys.argv[1], sys.argv[2]
protos, defs = ns["load_protos"](version), ns["load_openapi"](minor)
for full in sys.argv[3:]:
    m = protos[full]; d = defs.get(ns["proto_to_definition"](full))
    st = g["go_structs"](g["pkgdir_of"](m["rel"])).get(full.rsplit(".", 1)[1], {})
    print(f"== {full}  ({m['rel']}:{m['line']})  k8s-openapi: {d and d['file']}")
    jn = {ns["norm"](j): r for j, r in (d or {}).get("json", {}).items()}
    for f in m["fields"]:
        gf = st.get(f["name"], {})
        r = jn.get(ns["norm"](f["name"]))
        rt = d["fields"].get(r, "?") if d and r else "-"
        typ = f"map<{f['map'][0]},{f['map'][1]}>" if f["map"] else f["type"]
        print(f"  {f['number']:>3} {f['label']:8} {typ:45} {f['name']:28} | go {gf.get('go_type','?'):28} json:{gf.get('json','?'):38} | rust {r}: {rt}")
