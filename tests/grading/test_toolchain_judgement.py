"""How the toolchain checks judge what they read, on reports shaped as the script writes them:
names by what the demangler prints, pre-main calls by who wrote the callee, initialiser calls
within the function's own address range, exits by the condition around them, includes by
where they resolve. (The same rules on real compiler output: test_symbols, test_policy_paths.)
"""

from __future__ import annotations

import shutil

import pytest

from cudaenv.grading.demangle import demangle, mangled_owner, owner, qualified_name
from cudaenv.grading.static_cpp_script import parse_report
from cudaenv.grading.static_text_cpp import cpp_tokens, cpp_violations
from cudaenv.grading.symbol_allowlist import SymbolAllowlist
from cudaenv.grading.symbols import ObjectReport, claimed_scopes, object_violations
from cudaenv.problems.policy import ALL_CHECKS

needs_cxxfilt = pytest.mark.skipif(shutil.which("c++filt") is None, reason="needs binutils")

# the ABI's abbreviations of std:: (Sa allocator, Sb basic_string, Ss string, So ostream...)
STD_ABBREVIATED = ["_ZNSaIcEC1Ev", "_ZNSolsEi", "_ZNKSs4sizeEv", "_ZNSi4readEPcl", "_ZNSdD1Ev"]


@needs_cxxfilt
def test_the_abis_abbreviations_are_std_by_their_demangled_names() -> None:
    names = demangle([*STD_ABBREVIATED, "_ZN4dim3C1Ejjj", "_Z6launchPf", "_Znwm"])
    assert names["_ZNSaIcEC1Ev"] == "std::allocator<char>::allocator()"
    assert {owner(names[s]) for s in STD_ABBREVIATED} == {"std"}
    assert owner(names["_ZN4dim3C1Ejjj"]) == "dim3"
    assert owner(names["_Z6launchPf"]) == "" and owner(names["_Znwm"]) == ""
    # and the same from the mangling alone (no demangler in the sandbox)
    assert {mangled_owner(s) for s in STD_ABBREVIATED} == {"std"}


def test_qualified_names_drop_return_types_and_parameters() -> None:
    d = (
        "std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits"
        "<char> >(std::basic_ostream<char, std::char_traits<char> >&, char const*)"
    )
    assert qualified_name(d) == "std::operator<< <std::char_traits<char> >"
    assert owner(d) == "std"
    assert qualified_name("operator delete[](void*)") == "operator delete[]"
    assert owner("Foo::operator bool() const") == "Foo"
    assert owner("vtable for __cxxabiv1::__class_type_info") == "__cxxabiv1"


@needs_cxxfilt
def test_std_names_under_any_abbreviation_are_on_the_allow_list() -> None:
    allow = SymbolAllowlist()
    names = demangle(STD_ABBREVIATED)
    rep = ObjectReport(nm=[f"U {s}" for s in STD_ABBREVIATED], demangled=names)
    assert object_violations("s.cu", rep, libraries=False, allow=allow) == []
    # a file stream is still file access, however the ABI spells it
    fb = "_ZNSt13basic_filebufIcSt11char_traitsIcEE4openEPKcSt13_Ios_Openmode"
    rep = ObjectReport(nm=[f"U {fb}"], demangled=demangle([fb]))
    assert any(
        "file access" in v for v in object_violations("s.cu", rep, libraries=False, allow=allow)
    )


def _report(calls: list[str], demangled: dict[str, str] | None = None) -> ObjectReport:
    return ObjectReport(
        nm=["0000000000000000 t _GLOBAL__sub_I_s.cu"],
        init_calls={"_GLOBAL__sub_I_s.cu": calls},
        demangled=demangled or {},
    )


def test_pre_main_calls_are_judged_by_who_wrote_the_callee() -> None:
    allow = SymbolAllowlist(libraries=("cublas",))
    fine = {
        "_ZN4dim3C1Ejjj": "dim3::dim3(unsigned int, unsigned int, unsigned int)",
        "_ZNSaIcEC1Ev": "std::allocator<char>::allocator()",
        "_ZN6thrust6detail3fooEv": "thrust::detail::foo()",
    }
    calls = [*fine, "cublasCreate_v2", "__cudaLaunchKernel", "_ZNSt8ios_base4InitC1Ev"]
    assert object_violations("s.cu", _report(calls, fine), libraries=False, allow=allow) == []
    own = {"_ZN6BannerC1Ev": "Banner::Banner()"}
    out = object_violations("s.cu", _report(list(own), own), libraries=False, allow=allow)
    assert any("'Banner::Banner()': the solution's own code" in v for v in out)
    out = object_violations("s.cu", _report(["puts"]), libraries=False, allow=allow)
    assert any("'puts': writes output" in v for v in out)
    # a scope the solution reopens is the solution's: `namespace std { struct Evil ... }`
    evil = {"_ZNSt4EvilC1Ev": "std::Evil::Evil()"}
    claimed = claimed_scopes("namespace std { struct Evil { Evil(); }; }")
    out = object_violations(
        "s.cu", _report(list(evil), evil), libraries=False, allow=allow, claimed=claimed
    )
    assert any("std::Evil::Evil()" in v for v in out)
    # the policy decides whether the rule applies
    no_pre_main = ALL_CHECKS - {"pre_main"}
    out = object_violations(
        "s.cu", _report(["puts"]), libraries=False, allow=allow, checks=no_pre_main
    )
    assert out == []


def test_initialiser_calls_are_read_within_the_functions_own_range() -> None:
    # objdump -dr --disassemble=SYM also prints the relocations that precede SYM in its
    # section: a kernel launch of another function is not the initialiser's call
    text = (
        "@@SRC s.cu\n@@RC 0\n@@NM\n0000000000002d32 t _GLOBAL__sub_I_s\n"
        "@@FN _GLOBAL__sub_I_s 2ce0 52\n"
        "\t\t\t78: R_X86_64_PLT32\t__cudaLaunchKernel-0x4\n"
        "\t\t\t2d08: R_X86_64_PLT32\t_ZNSt8ios_base4InitC1Ev-0x4\n"
        "  2d2a:\tcall   2d2f <_ZN6BannerC1Ev>\n"
        "@@DEM\n_ZN6BannerC1Ev\tBanner::Banner()\n"
    )
    (unit,) = parse_report(text)
    assert unit.obj is not None
    assert unit.obj.init_calls["_GLOBAL__sub_I_s"] == [
        "_ZNSt8ios_base4InitC1Ev-0x4",
        "<_ZN6BannerC1Ev>",
    ]
    assert unit.obj.demangled == {"_ZN6BannerC1Ev": "Banner::Banner()"}


@pytest.mark.parametrize(
    ("code", "flagged"),
    [
        ("void f() { cudaError_t err = g(); if (err != cudaSuccess) { exit(err); } }", False),
        ("void f() { int s = g(); if (s) std::exit(s); }", False),
        ("void f() { exit(EXIT_FAILURE); exit(1); exit(EXIT_UNSUPPORTED); }", False),
        ("void f(int code) { exit(code); }", True),  # nothing tested the status
        ("void f() { exit(0); }", True),
        ("void f() { exit(EXIT_SUCCESS); }", True),
        ("void f() { exit(256); }", True),  # the low byte a parent sees is 0
        ("void f() { int err = g(); if (err != 0) { log(); } exit(err); }", True),
        ("void f() { auto q = exit; }", True),
        ("void f() { cublasStatus_t st = g(); if (CUBLAS_STATUS_SUCCESS != st) exit(st); }", False),
        # conditions that prove nothing about the status: exit(0) behind them
        ("void f() { int err = 0; if (err == 0) exit(err); }", True),
        ("void f() { int err = 0; if (err != 1) exit(err); }", True),
        ("void f() { int err = 0; if (!err) exit(err); }", True),
    ],
)
def test_an_exit_is_judged_by_its_status_and_the_condition_around_it(
    code: str, flagged: bool
) -> None:
    out = cpp_violations("s.cu", cpp_tokens(code), code)
    assert any("early exit" in v for v in out) == flagged, out


def test_a_declared_name_is_not_the_library_function() -> None:
    code = "__global__ void conv(const float* signal, int n) {}\nvoid g(int system) {}\n"
    assert cpp_violations("s.cu", cpp_tokens(code), code) == []
    call = "#include <csignal>\nvoid g() { signal(SIGINT, SIG_IGN); }\n"
    assert any("'signal'" in v for v in cpp_violations("s.cu", cpp_tokens(call), call))


def test_an_include_is_judged_by_where_it_resolves() -> None:
    inside = '#include "../include/solution.h"\n'
    assert cpp_violations("solution.cu", cpp_tokens(inside), inside, dirs={"", "include"}) == []
    for outside in ('#include "../../etc/x.h"\n', '#include "/etc/x.h"\n'):
        out = cpp_violations("solution.cu", cpp_tokens(outside), outside, dirs={"", "include"})
        assert any("outside the workspace" in v for v in out)


def test_data_the_problems_headers_declare_is_the_problems() -> None:
    from cudaenv.grading.symbol_allowlist import allowlist_for
    from cudaenv.problems.model import SourceFile

    header = SourceFile(
        path="include/common.h", content="extern const int OUTPUT_SIZE;\nvoid run(int n);\n"
    )
    allow = allowlist_for("nvcc -o t solution.cu src/common.cu", [header])
    assert allow.allows("OUTPUT_SIZE") and allow.allows("_Z3runi")
    assert not allow.allows("SECRET_SIZE")
