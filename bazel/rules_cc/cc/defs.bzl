"""rules_cc shim: the native C++ rules of Bazel 4.2.3 under rules_cc's names."""

def cc_library(**kwargs):
    native.cc_library(**kwargs)

def cc_binary(**kwargs):
    native.cc_binary(**kwargs)

def cc_test(**kwargs):
    native.cc_test(**kwargs)

def cc_import(**kwargs):
    native.cc_import(**kwargs)

def cc_proto_library(**kwargs):
    native.cc_proto_library(**kwargs)

def objc_library(**kwargs):
    native.objc_library(**kwargs)

cc_toolchain = native.cc_toolchain
cc_toolchain_suite = native.cc_toolchain_suite
