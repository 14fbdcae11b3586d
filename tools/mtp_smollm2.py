"""The MTP module trained by tools/train_mtp_smollm2.py, and its files (GGUF side file, safetensors).

Qwen3.5's MTP form (vLLM qwen3_5_mtp.py) with the trunk family's own block (SmolLM2 is Llama, so
plain RMSNorm weights w, not 1 + w):

    e = RMSNorm(embed(x_{t+1})) * enorm        h = RMSNorm(h_t) * hnorm
    u = fc(concat(e, h))                       fc: Linear(2 * 576 -> 576), no bias, embedding first
    u = LlamaDecoderLayer(u)                   its own causal attention over the MTP's positions,
                                               RoPE at position t
    g = RMSNorm(u) * norm                      the output hidden; chained drafting feeds g back as h
    logits_{t+2} = g @ embed^T                 the trunk's tied embedding as the head (frozen)

h_t is the trunk's final-normed hidden state at t (transformers' last_hidden_state).
"""
import copy

import numpy as np
import torch
import torch.nn as nn

TRUNK_LAYERS = 30
MTP_BLOCK = TRUNK_LAYERS  # blk.30 in the GGUF side file

# HF layer name -> llama.cpp GGUF name (without "blk.N." / ".weight")
LAYER_GGUF = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
NEXTN_GGUF = {
    "fc": "nextn.eh_proj",
    "pre_fc_norm_embedding": "nextn.enorm",
    "pre_fc_norm_hidden": "nextn.hnorm",
    "norm": "nextn.shared_head_norm",
}


def permute(x, n_head, n_head_kv=None):  # convert_hf_to_gguf.py LlamaModel.permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def unpermute(x, n_head, n_head_kv=None):  # the inverse of permute
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return x.reshape(n_head, x.shape[0] // n_head // 2, 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def mtp_config(trunk_config):
    cfg = copy.deepcopy(trunk_config)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg._attn_implementation = "eager"  # an explicit additive mask (chained rows need their own)
    return cfg


class MTP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        from transformers.models.llama.modeling_llama import (LlamaDecoderLayer, LlamaRMSNorm,
                                                              LlamaRotaryEmbedding)
        d, eps = cfg.hidden_size, cfg.rms_norm_eps
        self.pre_fc_norm_embedding = LlamaRMSNorm(d, eps)
        self.pre_fc_norm_hidden = LlamaRMSNorm(d, eps)
        self.fc = nn.Linear(2 * d, d, bias=False)
        self.layers = nn.ModuleList([LlamaDecoderLayer(cfg, layer_idx=0)])
        self.norm = LlamaRMSNorm(d, eps)
        self.rotary = LlamaRotaryEmbedding(cfg)

    def forward(self, h, e, pos, mask):
        """h, e: [B, T, d] trunk hidden (or the MTP's own g) and embed(token); pos: [B, T] positions;
        mask: [1 or B, 1, T, T] additive. Returns g: [B, T, d] (logits = g @ embed^T)."""
        u = self.fc(torch.cat([self.pre_fc_norm_embedding(e), self.pre_fc_norm_hidden(h)], -1))
        pe = self.rotary(u, pos)
        u = self.layers[0](u, attention_mask=mask, position_embeddings=pe)
        if isinstance(u, tuple):
            u = u[0]
        return self.norm(u)

    def init_from_trunk(self, trunk):
        """Decoder layer from the trunk's last layer, the four norms from the trunk's final norm, fc as
        [I/2 | I/2] (half the embedding, half the hidden)."""
        m = trunk.model
        self.layers[0].load_state_dict(m.layers[-1].state_dict())
        for n in (self.pre_fc_norm_embedding, self.pre_fc_norm_hidden, self.norm):
            n.weight.data.copy_(m.norm.weight.data)
        d = self.fc.weight.shape[0]
        eye = torch.eye(d)
        self.fc.weight.data.copy_(torch.cat([0.5 * eye, 0.5 * eye], 1))


def causal_mask(t):
    return torch.full((t, t), float("-inf")).triu(1)[None, None]


def chained_mask(t):
    """2T rows: step-1 rows 0..T-1 (causal), then step-2 row T+i at position i+1, which sees step-1 rows
    0..i (the MTP's cache when it drafts after token i+1) and itself."""
    m = torch.full((2 * t, 2 * t), float("-inf"))
    m[:t, :t] = causal_mask(t)[0, 0]
    m[t:, :t] = causal_mask(t)[0, 0]
    m[t:, t:][torch.eye(t, dtype=torch.bool)] = 0.0
    return m[None, None]


def hf_state(mtp):
    """HF names as qwen3_5's checkpoints spell them (mtp.*)."""
    out = {}
    for k, v in mtp.state_dict().items():
        if k.startswith("rotary."):
            continue
        out["mtp." + k] = v.detach().clone().contiguous()
    return out


def round_matrices_f16(mtp):
    """The files store matrices in F16 and norms in F32: round the module to what the files hold."""
    with torch.no_grad():
        for p in mtp.parameters():
            if p.dim() == 2:
                p.copy_(p.half().float())


def gguf_tensors(mtp, cfg):
    nh, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
    out = {}
    for k, v in mtp.state_dict().items():
        if k.startswith("rotary."):
            continue
        w = v.detach().float().numpy()
        mod = k[: -len(".weight")]
        if mod.startswith("layers.0."):
            name = LAYER_GGUF[mod[len("layers.0."):]]
            if name == "attn_q":
                w = permute(w, nh)
            elif name == "attn_k":
                w = permute(w, nh, nkv)
        else:
            name = NEXTN_GGUF[mod]
        w = np.ascontiguousarray(w.astype(np.float16 if w.ndim == 2 else np.float32))
        out[f"blk.{MTP_BLOCK}.{name}.weight"] = w
    return out


def write_gguf(path, mtp, cfg):
    import gguf
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("SmolLM2-135M-Instruct MTP head (tools/train_mtp_smollm2.py)")
    w.add_block_count(TRUNK_LAYERS + 1)
    w.add_nextn_predict_layers(1)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(float(cfg.rms_norm_eps))
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_vocab_size(cfg.vocab_size)
    for name, arr in gguf_tensors(mtp, cfg).items():
        w.add_tensor(name, arr)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def read_gguf(path, cfg):
    """The GGUF side file back into an MTP module (un-permuting q/k); checks the metadata."""
    import gguf
    r = gguf.GGUFReader(str(path))

    def field(key):
        f = r.fields[key]
        v = f.parts[f.data[0]]
        return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v.tolist()[0]

    assert field("general.architecture") == "llama", path
    assert field("llama.block_count") == TRUNK_LAYERS + 1, path
    assert field("llama.nextn_predict_layers") == 1, path
    inv_layer = {v: k for k, v in LAYER_GGUF.items()}
    inv_nextn = {v: k for k, v in NEXTN_GGUF.items()}
    nh, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
    state = {}
    prefix = f"blk.{MTP_BLOCK}."
    for t in r.tensors:
        assert t.name.startswith(prefix) and t.name.endswith(".weight"), t.name
        g = t.name[len(prefix): -len(".weight")]
        shape = [int(x) for x in reversed(t.shape.tolist())]
        arr = np.array(t.data, dtype=np.float32).reshape(shape)
        if g in inv_layer:
            if g == "attn_q":
                arr = unpermute(arr, nh)
            elif g == "attn_k":
                arr = unpermute(arr, nh, nkv)
            state["layers.0." + inv_layer[g] + ".weight"] = torch.from_numpy(arr.copy())
        else:
            state[inv_nextn[g] + ".weight"] = torch.from_numpy(arr.copy())
    mtp = MTP(cfg)
    missing, unexpected = mtp.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith("rotary.") for k in missing), (missing, unexpected)
    return mtp.eval()
