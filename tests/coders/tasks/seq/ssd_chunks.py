"""A chunked linear recurrence in the style of Mamba2's state-space duality: the sequence is cut into
chunks (einops), decays inside a chunk come from a segment sum (cumsum, a broadcast difference, a
causal mask), and einsums of three and four operands combine them with the inputs; the states carried
between chunks start from zeros (zeros_like and cat) and decay by the chunk ends (F.pad of a cumsum's
last column). Decays are data-dependent and in (-1, 0), so every exp stays below 1."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from einops import rearrange

B, C, L, H, P, N = 2, 3, 4, 3, 5, 4  # batch, chunks, chunk length, heads, head width, state width


class Model(nn.Module):
    def __init__(self, chunk, width, state):
        super().__init__()
        self.chunk = chunk
        self.to_b = nn.Linear(width, state, bias=False)
        self.to_c = nn.Linear(width, state, bias=False)

    def segment_sums(self, a):
        """(..., l) -> (..., l, l): the sum of a over (s, l] below the diagonal, -inf above it."""
        t = a.size(-1)
        a = torch.cumsum(a, dim=-1)
        sums = a[..., :, None] - a[..., None, :]
        causal = torch.tril(torch.ones(t, t, device=a.device, dtype=bool))
        return sums.masked_fill(~causal, -torch.inf)

    def forward(self, x):
        a = -torch.sigmoid(x.mean(dim=-1))  # (b, t, h)
        bs, cs = self.to_b(x), self.to_c(x)  # (b, t, h, n)
        xs, a, bs, cs = [rearrange(v, "b (c l) ... -> b c l ...", l=self.chunk) for v in (x, a, bs, cs)]
        a = rearrange(a, "b c l h -> b h c l")
        within = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", cs, bs, torch.exp(self.segment_sums(a)), xs)
        a_cum = torch.cumsum(a, dim=-1)
        states = torch.einsum("bclhn,bhcl,bclhp->bchpn", bs, torch.exp(a_cum[:, :, :, -1:] - a_cum), xs)
        states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
        across = torch.exp(self.segment_sums(F.pad(a_cum[:, :, :, -1], (1, 0))))
        carried = torch.einsum("bhzc,bchpn->bzhpn", across, states)
        between = torch.einsum("bclhn,bchpn,bhcl->bclhp", cs, carried[:, :-1], torch.exp(a_cum))
        return rearrange(within + between, "b c l h p -> b (c l) h p"), carried[:, -1]


def get_inputs():
    return [torch.randn(B, C * L, H, P)]


def get_init_inputs():
    return [L, P, N]


# the chunk length is an int attribute of the module, a constant of the trace: it keeps its value
MTMC = {"cpu_sizes": [{"B": 3, "C": 2, "H": 2, "P": 7, "N": 3}, {"B": 1, "C": 5, "H": 3, "P": 3, "N": 5}]}
