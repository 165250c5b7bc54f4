"""FX: trace a module into a graph, read it as a table, swap one op, regenerate Python.

    python snippets/dissecting/fx_rewrite.py

torch.fx.symbolic_trace runs the module once on proxies, records every call into a
torch.fx.Graph, and generates a GraphModule from it.
"""

import torch
import torch.fx
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
results = {}
results["device"] = device


# --8<-- [start:module]
class Residual(torch.nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        h = torch.relu(self.proj(x))       # a submodule call, then a function call
        return h + x.mean(-1, keepdim=True)  # a method call, then an operator


model = Residual().to(device)
gm = torch.fx.symbolic_trace(model)
print(gm.graph)
# --8<-- [end:module]
results["traced_graph"] = torch.fx.symbolic_trace(model)  # a copy, kept as traced

# --8<-- [start:table]
# graph.print_tabular() prints this table too, but needs the `tabulate` package.
def target_name(node):
    # A call_function target is a Python function: print its qualified name, not its
    # repr (an address).
    if node.op == "call_function":
        return torch.fx.node._get_qualified_name(node.target)
    return str(node.target)


header = ("opcode", "name", "target", "args", "kwargs")
rows = [(n.op, n.name, target_name(n), str(n.args), str(n.kwargs))
        for n in gm.graph.nodes]
widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
for row in [header] + rows:
    print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
# --8<-- [end:table]
results["nodes"] = [{"op": row[0], "name": row[1], "target": row[2]} for row in rows]

# --8<-- [start:rewrite]
# Swap relu for gelu: put a gelu node after each relu node, hand it relu's users, and
# delete the relu.
swapped = 0
for node in list(gm.graph.nodes):
    if node.op == "call_function" and node.target is torch.relu:
        with gm.graph.inserting_after(node):
            gelu = gm.graph.call_function(F.gelu, node.args, node.kwargs)
        node.replace_all_uses_with(gelu)
        gm.graph.erase_node(node)
        swapped += 1
gm.graph.lint()  # the graph is still well formed
gm.recompile()   # regenerate gm.code (and gm.forward) from the edited graph
print(f"nodes rewritten: {swapped}")
print(gm.code.strip())
# --8<-- [end:rewrite]

# --8<-- [start:check]
x = torch.randn(4, 16, device=device)
with torch.no_grad():
    wanted = F.gelu(model.proj(x)) + x.mean(-1, keepdim=True)
    new_matches = torch.allclose(gm(x), wanted, atol=1e-6)
    # The original module is untouched: it still computes relu.
    old_differs = not torch.allclose(model(x), wanted, atol=1e-6)
print(f"rewritten module computes gelu(proj(x)) + mean(x): {new_matches}")
print(f"original module still computes relu, so differs: {old_differs}")
# --8<-- [end:check]
results.update(swapped=swapped, new_matches=new_matches, old_differs=old_differs,
               code=gm.code.strip())
results["rewritten_graph"] = gm
