"""The extension module exports PyInit__ktune and nothing else.

A C++ library template the module instantiates (say, std::istream::_M_extract<double>) and
exports would be bound by the shared libraries the module loads (toml++ reading a float from a
manifest), so that one stream would be driven by two copies of the C++ library: on a GPU host
that ended the Python process with a segmentation fault. python/src/module.map keeps them in."""

import shutil
import subprocess
import unittest

from ktune import _ktune


class ModuleSymbolsTest(unittest.TestCase):
    def test_only_the_init_function_is_exported(self):
        nm = shutil.which("nm")
        if nm is None:
            self.skipTest("nm (binutils) is not installed")
        listing = subprocess.run([nm, "-D", "--defined-only", _ktune.__file__],
                                 capture_output=True, text=True, check=True).stdout
        exported = [line.split()[-1] for line in listing.splitlines()
                    if len(line.split()) == 3 and line.split()[1] in "TWVDBRiu"]
        self.assertEqual(exported, ["PyInit__ktune"])


if __name__ == "__main__":
    unittest.main()
