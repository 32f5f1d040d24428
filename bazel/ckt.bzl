"""Build rules for ckt kernels: one source, three backends.

The backend is chosen with --config=cpu|nvidia|amd (see .bazelrc), which sets
--define=ckt_backend=... and so the config_settings //bazel:cpu, //bazel:nvidia
and //bazel:amd. No --define=ckt_backend at all builds for cpu.

Every label below is made with Label() here, so it names the ckt repository both
when ckt is the main workspace and when it is an external one (`@ckt`, loaded
from another project as `@ckt//bazel:ckt.bzl`; see README.md).

* cpu    : the sources are ordinary cc_binary / cc_test targets built by gcc; the
           kernels run on the CPU SIMT emulator (ckt/arch/cpu.h).
* nvidia : the sources are compiled as CUDA by nvcc (sm_80 and sm_90a), the CUDA
           runtime linked statically, so the binary runs on any machine with an
           NVIDIA driver.
* amd    : the sources are compiled as HIP by hipcc (gfx90a and gfx940) and linked
           against libamdhip64.

A target `x` declared with ckt_kernel_binary / ckt_kernel_test exists in the cpu
configuration as `x` (runnable with bazel run / bazel test); in the GPU
configurations it is `x_gpu`, an executable built by the vendor compiler, to be
copied to a GPU machine and run there.
"""

_NVCC = "/usr/local/cuda/bin/nvcc"
_HIPCC = "/usr/bin/hipcc"

NVIDIA_ARCHS = ["80", "90a"]
AMD_ARCHS = ["gfx90a", "gfx940"]

# Labels of this repository, resolved where this file lives (not in the BUILD
# file that calls a macro): "//bazel:cpu" in ckt itself, "@ckt//bazel:cpu" in a
# project that names ckt `@ckt`. Strings, because select() keys and the macros'
# deps take strings.
def _ckt_label(label):
    return str(Label(label))

_CKT = _ckt_label("//:ckt")
_GTEST_MAIN = _ckt_label("@gtest//:gtest_main")
_NVIDIA = _ckt_label("//bazel:nvidia")
_AMD = _ckt_label("//bazel:amd")
_INCOMPATIBLE = _ckt_label("//bazel:incompatible")
_DEFAULT = "//conditions:default"

# cpu is also the backend when no --define=ckt_backend is given.
CPU_ONLY = select({
    _NVIDIA: [_INCOMPATIBLE],
    _AMD: [_INCOMPATIBLE],
    _DEFAULT: [],
})

GPU_ONLY = select({
    _NVIDIA: [],
    _AMD: [],
    _DEFAULT: [_INCOMPATIBLE],
})

BACKEND = select({
    _NVIDIA: "nvidia",
    _AMD: "amd",
    _DEFAULT: "cpu",
})

# Warnings every ckt source compiles cleanly with on gcc.
CKT_COPTS = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-function"]
CKT_CONLYOPTS = ["-std=c11"]

# What a ckt_gpu_library gives the GPU binaries that depend on it: its static
# archive of vendor-compiled objects.
CktGpuLibraryInfo = provider(fields = ["archives"])

def _gpu_toolchain(ctx, pic):
    """The compiler, compile flags and link flags of the chosen backend."""
    backend = ctx.attr.backend
    headers = []
    includes = []
    defines = []
    libs = []
    linkopts = []
    for dep in ctx.attr.deps:
        if CktGpuLibraryInfo in dep:
            libs += dep[CktGpuLibraryInfo].archives.to_list()
            continue
        cc = dep[CcInfo]
        comp = cc.compilation_context
        headers.append(comp.headers)
        for inc in comp.includes.to_list() + comp.system_includes.to_list() + comp.quote_includes.to_list():
            includes.append(inc)
        defines += comp.defines.to_list()
        for li in cc.linking_context.linker_inputs.to_list():
            linkopts += li.user_link_flags
            for lib in li.libraries:
                if lib.static_library:
                    libs.append(lib.static_library)
                elif lib.pic_static_library:
                    libs.append(lib.pic_static_library)
    cflags = []
    linkflags = []
    if backend == "nvidia":
        compiler = ctx.var.get("CKT_NVCC", _NVCC)
        cflags += ["-std=c++17", "-O3", "-lineinfo", "-x", "cu", "-Xcompiler", "-Wall,-Wno-unused-but-set-variable",
                   "-Werror", "all-warnings", "-diag-suppress", "177"]
        if pic:
            cflags += ["-Xcompiler", "-fPIC"]
        for a in NVIDIA_ARCHS:
            cflags += ["-gencode", "arch=compute_%s,code=sm_%s" % (a, a)]
        linkflags += ["-cudart", "static"]
        for a in NVIDIA_ARCHS:
            linkflags += ["-gencode", "arch=compute_%s,code=sm_%s" % (a, a)]
    elif backend == "amd":
        compiler = ctx.var.get("CKT_HIPCC", _HIPCC)
        cflags += ["-std=c++17", "-O3", "-x", "hip", "-Wall", "-Werror",
                   "-Wno-unused-function", "-Wno-unused-command-line-argument"]
        if pic:
            cflags.append("-fPIC")
        for a in AMD_ARCHS:
            cflags.append("--offload-arch=" + a)
        for a in AMD_ARCHS:
            linkflags.append("--offload-arch=" + a)
        linkflags.append("-lamdhip64")
    else:
        fail("ckt GPU targets need --config=nvidia or --config=amd")
    cflags += ["-I."]
    for inc in includes:
        cflags += ["-I" + inc]
    for d in defines + ctx.attr.defines:
        # nvcc splits an option's value at commas (-DA=1,B=2 is two macros):
        # a comma inside one definition, e.g. X(FWD,d32,32,32), is escaped
        cflags.append("-D" + (d.replace(",", "\\,") if backend == "nvidia" else d))
    cflags += ctx.attr.copts
    hdrs = depset(ctx.files.srcs, transitive = headers)
    return struct(compiler = compiler, cflags = cflags, linkflags = linkflags, libs = libs, hdrs = hdrs)

def _gpu_compile(ctx, tc):
    """One object per source file (separate actions: they build in parallel)."""
    objs = []
    for src in [f for f in ctx.files.srcs if not f.path.endswith(".h")]:
        obj = ctx.actions.declare_file("_%s_objs/%s.o" % (ctx.label.name, src.basename))
        ctx.actions.run_shell(
            command = tc.compiler + ' "$@"',
            arguments = tc.cflags + ["-c", src.path, "-o", obj.path],
            inputs = tc.hdrs,
            outputs = [obj],
            mnemonic = "CktGpuCompile",
            progress_message = "Compiling %s for %s" % (src.short_path, ctx.attr.backend),
            use_default_shell_env = True,
        )
        objs.append(obj)
    return objs

def _gpu_binary_impl(ctx):
    backend = ctx.attr.backend
    out = ctx.actions.declare_file(ctx.label.name)
    tc = _gpu_toolchain(ctx, pic = False)
    objs = _gpu_compile(ctx, tc)
    ctx.actions.run_shell(
        command = tc.compiler + ' "$@"',
        arguments = tc.linkflags + [o.path for o in objs] + [f.path for f in tc.libs] +
                    ["-o", out.path, "-lpthread", "-lm", "-ldl"],
        inputs = objs + tc.libs,
        outputs = [out],
        mnemonic = "CktGpuLink",
        progress_message = "Linking %s for %s" % (ctx.label, backend),
        use_default_shell_env = True,
    )
    return [DefaultInfo(executable = out, files = depset([out]))]

def _gpu_library_impl(ctx):
    tc = _gpu_toolchain(ctx, pic = True)
    objs = _gpu_compile(ctx, tc)
    archive = ctx.actions.declare_file("lib%s.a" % ctx.label.name)
    ctx.actions.run_shell(
        command = 'rm -f "$1" && ar rcs "$@"',
        arguments = [archive.path] + [o.path for o in objs],
        inputs = objs,
        outputs = [archive],
        mnemonic = "CktGpuArchive",
        progress_message = "Archiving %s" % ctx.label,
        use_default_shell_env = True,
    )
    outs = [archive]
    if ctx.attr.shared:
        so = ctx.actions.declare_file(ctx.attr.shared)
        ctx.actions.run_shell(
            command = tc.compiler + ' "$@"',
            arguments = ["-shared"] + tc.linkflags + [o.path for o in objs] + [f.path for f in tc.libs] +
                        ["-o", so.path, "-lpthread", "-lm", "-ldl"],
            inputs = objs + tc.libs,
            outputs = [so],
            mnemonic = "CktGpuLinkShared",
            progress_message = "Linking %s for %s" % (so.short_path, ctx.attr.backend),
            use_default_shell_env = True,
        )
        outs.append(so)
    # An empty CcInfo too: a select() may hand this target to a cc_binary that is
    # incompatible with the GPU configuration but still analysed.
    return [DefaultInfo(files = depset(outs)), CktGpuLibraryInfo(archives = depset([archive] + tc.libs)), CcInfo()]

ckt_gpu_binary = rule(
    implementation = _gpu_binary_impl,
    executable = True,
    attrs = {
        "srcs": attr.label_list(allow_files = [".c", ".cc", ".cu", ".h"]),
        "deps": attr.label_list(providers = [[CcInfo], [CktGpuLibraryInfo]]),
        "backend": attr.string(mandatory = True),
        "copts": attr.string_list(),
        "defines": attr.string_list(),
    },
    doc = "An executable compiled by nvcc or hipcc for the backend chosen by --config.",
)

ckt_gpu_library = rule(
    implementation = _gpu_library_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".c", ".cc", ".cu", ".h"]),
        "deps": attr.label_list(providers = [[CcInfo], [CktGpuLibraryInfo]]),
        "backend": attr.string(mandatory = True),
        "copts": attr.string_list(),
        "defines": attr.string_list(),
        "shared": attr.string(doc = "also link a shared library at this path (relative to the package), " +
                                    "e.g. \"gpu/libckt_fmha.so\"; the CUDA runtime inside it statically"),
    },
    doc = """Objects compiled (position-independent) by nvcc or hipcc into lib<name>.a, which
    ckt_gpu_binary targets link when they list this target in deps, and with `shared`
    a shared library with a C ABI for other programs (ctypes).""",
)

def ckt_kernel_binary(name, srcs, deps = [], copts = [], defines = [], **kwargs):
    """A program with ckt kernels: `name` on cpu, `name_gpu` on nvidia/amd."""
    conly = [s for s in srcs if s.endswith(".c")]
    native.cc_binary(
        name = name,
        srcs = srcs,
        deps = deps + [_CKT],
        copts = CKT_COPTS + (CKT_CONLYOPTS if conly else []) + copts,
        defines = defines,
        linkopts = ["-lpthread", "-lm"],
        target_compatible_with = CPU_ONLY,
        **kwargs
    )
    ckt_gpu_binary(
        name = name + "_gpu",
        srcs = srcs,
        deps = deps + [_CKT],
        copts = copts,
        defines = defines,
        backend = BACKEND,
        target_compatible_with = GPU_ONLY,
    )

def ckt_kernel_test(name, srcs, deps = [], copts = [], defines = [], size = "small",
                    profiles = ["nv", "cdna"], gpu = True, **kwargs):
    """A GoogleTest test with ckt kernels.

    cpu:        a cc_test `name` on the emulator's nv profile (warp 32) and, when
                "cdna" is in profiles, `name_cdna` (wave 64, CDNA matrix layouts).
    nvidia/amd: an executable `name_gpu` built by nvcc/hipcc; run it on the GPU machine.
    gpu = False: no `name_gpu` (tests of the CPU emulator itself).
    """
    for profile in profiles:
        native.cc_test(
            name = name if profile == "nv" else name + "_" + profile,
            srcs = srcs,
            deps = deps + [_CKT, _GTEST_MAIN],
            copts = CKT_COPTS + copts,
            defines = defines + (["CKT_CPU_PROFILE_CDNA"] if profile == "cdna" else []),
            size = size,
            linkopts = ["-lpthread", "-lm"],
            target_compatible_with = CPU_ONLY,
            **kwargs
        )
    if not gpu:
        return
    ckt_gpu_binary(
        name = name + "_gpu",
        srcs = srcs,
        deps = deps + [_CKT, _GTEST_MAIN],
        copts = copts,
        defines = defines,
        backend = BACKEND,
        target_compatible_with = GPU_ONLY,
    )

def _header_check_impl(ctx):
    backend = ctx.attr.backend
    if backend == "nvidia":
        cmd = ctx.var.get("CKT_NVCC", _NVCC) + " -std=c++17 -x cu -c -o /dev/null -I. " + \
              "-Werror all-warnings -arch=sm_90a"
    elif backend == "amd":
        cmd = ctx.var.get("CKT_HIPCC", _HIPCC) + " -std=c++17 -x hip -c -o /dev/null -I. " + \
              "-Wall -Werror -Wno-unused-function --offload-arch=gfx90a"
    else:
        fail("ckt_header_check needs --config=nvidia or --config=amd")
    stamp = ctx.actions.declare_file(ctx.label.name + ".ok")
    script = "set -e\nfor h in %s; do\n  printf '#include \"%%s\"\\n' \"$h\" > \"$TMPDIR/hc.cc\"\n" % \
             " ".join([f.path for f in ctx.files.hdrs if not f.path.endswith("_body.h")]) + \
             "  %s \"$TMPDIR/hc.cc\" || { echo \"header $h does not compile alone\"; exit 1; }\ndone\ntouch %s\n" % \
             (cmd, stamp.path)
    ctx.actions.run_shell(
        command = "export TMPDIR=$(mktemp -d)\n" + script,
        inputs = ctx.files.hdrs,
        outputs = [stamp],
        mnemonic = "CktHeaderCheck",
        progress_message = "Compiling each ckt header alone for %s" % backend,
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset([stamp]))]

_header_check = rule(
    implementation = _header_check_impl,
    attrs = {
        "hdrs": attr.label_list(allow_files = [".h"]),
        "backend": attr.string(mandatory = True),
    },
)

def ckt_header_check(name, hdrs):
    """Builds (in --config=nvidia / amd) only if every header compiles alone
    with the vendor compiler."""
    _header_check(
        name = name,
        hdrs = hdrs,
        backend = BACKEND,
        target_compatible_with = GPU_ONLY,
    )

def _compile_check_impl(ctx):
    backend = ctx.attr.backend
    if backend == "nvidia":
        cmd = ctx.var.get("CKT_NVCC", _NVCC) + " -std=c++17 -x cu -c -o /dev/null -I. " + \
              "-Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror -arch=sm_90a"
    elif backend == "amd":
        cmd = ctx.var.get("CKT_HIPCC", _HIPCC) + " -std=c++17 -x hip -c -o /dev/null -I. " + \
              "-Wall -Wextra -Werror --offload-arch=gfx90a"
    else:
        fail("ckt_gpu_compile_check needs --config=nvidia or --config=amd")
    stamp = ctx.actions.declare_file(ctx.label.name + ".ok")
    script = "set -e\n"
    for f in ctx.files.srcs:
        script += "%s %s || { echo \"%s does not compile cleanly for %s\"; exit 1; }\n" % \
                  (cmd, f.path, f.short_path, backend)
    ctx.actions.run_shell(
        command = script + "touch %s\n" % stamp.path,
        inputs = ctx.files.srcs + ctx.files.hdrs,
        outputs = [stamp],
        mnemonic = "CktCompileCheck",
        progress_message = "Compiling %s for %s (warnings as errors)" % (ctx.label, backend),
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset([stamp]))]

_compile_check = rule(
    implementation = _compile_check_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".c", ".cc", ".cu"]),
        "hdrs": attr.label_list(allow_files = [".h"]),
        "backend": attr.string(mandatory = True),
    },
)

def ckt_gpu_compile_check(name, srcs, hdrs):
    """Builds (in --config=nvidia / amd) only if every source compiles, as CUDA
    or HIP C++17, with -Wall -Wextra and warnings as errors (nothing is linked
    or run: the cpu configuration runs such a source, e.g. //tests:zero_init_test)."""
    _compile_check(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        backend = BACKEND,
        target_compatible_with = GPU_ONLY,
    )
