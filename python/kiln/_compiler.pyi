"""Type stubs of the extension kiln._compiler (src/compiler.cc); use kiln.compile."""

def compile(source: str, is_path: bool, dims: dict[str, int], options: dict[str, list[str]]) -> bytes:
    """Compiles a .onnx/.relax file (is_path) or .relax text to .vmfb bytes."""
