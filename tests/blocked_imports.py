"""The start of a ``python -c`` script that refuses some packages, as if their extra were
not installed (the packages comma-separated in ``sys.argv[1]``): a meta-path finder raises
``ModuleNotFoundError`` for them and their submodules. Used by the tests of the CLI's
imports and of the packaging's extras."""

BLOCK = r"""
import importlib.abc, json, sys
blocked = set(sys.argv[1].split(",")) - {""}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
"""
