"""The tiny world's model parts, all diffusers / transformers classes so the standard pipeline loads them.

A word-level tokenizer over the world's words, a 2-layer CLIP text encoder (width 32), a three-level VAE
and a two-level UNet (32 / 64 channels) with LoRA-able attention, feed-forward and convolution layers at both
levels. 32 x 32 images become 8 x 8 x 4 latents (the VAE halves twice); the UNet works at 8 x 8 and 4 x 4
with cross-attention at 8 x 8: about 1 M parameters in all, small enough to train on a CPU in minutes.
"""

from __future__ import annotations

from pathlib import Path

from manta.world.vocabulary import COLOURS, OBJECTS, STYLE_WORDS, TEXTURE_WORDS

MAX_TOKENS = 12
TEXT_WIDTH = 32
SPECIAL = ("<pad>", "<bos>", "<eos>", "<unk>")


def world_words() -> list[str]:
    """Every word a world caption uses, plus punctuation."""
    words = {"a", ",", *OBJECTS, *COLOURS}
    for phrase in (*TEXTURE_WORDS.values(), *STYLE_WORDS.values()):
        words.update(phrase.split())
    return sorted(words)


def build_tokenizer(folder: Path | None = None):
    """A word-level fast tokenizer (lower-cased, punctuation split off); unknown words map to <unk>."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate([*SPECIAL, *world_words()])}
    core = Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A <eos>", special_tokens=[("<bos>", vocab["<bos>"]), ("<eos>", vocab["<eos>"])]
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        model_max_length=MAX_TOKENS,
    )
    if folder is not None:
        tokenizer.save_pretrained(folder)
    return tokenizer


def build_text_encoder(vocab_size: int):
    from transformers import CLIPTextConfig, CLIPTextModel

    return CLIPTextModel(
        CLIPTextConfig(
            vocab_size=vocab_size,
            hidden_size=TEXT_WIDTH,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=MAX_TOKENS,
            projection_dim=TEXT_WIDTH,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
        )
    )


def build_vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        block_out_channels=(16, 32, 32),
        layers_per_block=1,
        down_block_types=("DownEncoderBlock2D",) * 3,
        up_block_types=("UpDecoderBlock2D",) * 3,
        norm_num_groups=4,  # 4 channels per group at the first level: 1 per group would erase colour
        sample_size=32,
        mid_block_add_attention=False,
        scaling_factor=1.0,  # replaced by 1 / std of the trained VAE's latents
    )


def build_unet():
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(32, 64),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=TEXT_WIDTH,
        attention_head_dim=8,
        norm_num_groups=8,
        # The pooled caption is also added to the time embedding (diffusers' "text" addition embedding): a
        # global signal every resnet sees, which a model this small learns far faster than cross-attention.
        addition_embed_type="text",
        addition_embed_type_num_heads=4,
    )


# What a world LoRA adapts: attention and feed-forward of the transformer block and the resnets' convolutions
# (attention alone cannot teach the UNet a new shape at this size).
LORA_TARGETS = (
    "to_q",
    "to_k",
    "to_v",
    "to_out.0",
    "proj_in",
    "proj_out",
    "ff.net.0.proj",
    "ff.net.2",
    "conv1",
    "conv2",
)
