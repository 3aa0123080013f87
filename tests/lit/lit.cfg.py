# lit configuration for galvc pass tests: IR text in, FileCheck on the output.
import os
import lit.formats

config.name = "galvc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
build_dir = lit_config.params.get("build_dir")
if not build_dir:
    lit_config.fatal("run lit with --param build_dir=BUILD")
config.test_exec_root = os.path.join(build_dir, "lit-out")
src_dir = os.path.dirname(os.path.dirname(config.test_source_root))

config.substitutions.append(("%galv-opt", os.path.join(build_dir, "galv-opt")))
config.substitutions.append(("%galvc", os.path.join(build_dir, "galvc")))
config.substitutions.append(("%mlir-check", os.path.join(build_dir, "galv-mlir-check")))
config.substitutions.append(("%FileCheck", "FileCheck-19"))
config.substitutions.append(("%src", src_dir))
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
