// Kernel names from a kallsyms text relocated to the recording's kernel (profile/kallsyms.h).
#include "profile/kallsyms.h"

#include <gtest/gtest.h>

#include <optional>

namespace pdfix {
namespace {

constexpr char kText[] =
    "ffffffff81000000 T _text\n"
    "ffffffff81000100 T start_kernel\n"
    "ffffffff81000200 t helper\n"
    "ffffffff81000300 D some_data\n"
    "ffffffffc0000000 t mod_fn\t[mod]\n";

TEST(Kallsyms, NamesRecordedAddressesOfAnotherBootByTheReferenceSymbol) {
  // Recorded where _text lay 0x2000000 higher (KASLR): addresses are shifted back.
  const profile::Kallsyms k(kText, "_text", 0xffffffff83000000);
  EXPECT_EQ(k.function_at(0xffffffff83000150), "start_kernel");
  EXPECT_EQ(k.function_at(0xffffffff83000200), "helper");
  // Data symbols end the function before them no more than the next function does.
  EXPECT_EQ(k.function_at(0xffffffff83000350), "helper");
  EXPECT_EQ(k.function_at(0xffffffff82ffffff), std::nullopt);
  // Modules move apart from the kernel at each boot: the caller names none of them then.
  EXPECT_TRUE(k.relocated());
  EXPECT_FALSE(profile::Kallsyms(kText, "_text", 0xffffffff81000000).relocated());
}

// Aliases at one address are named as perf names them: the last the text lists (the others have
// no size once each symbol runs to the next one's address, and perf keeps the one with a size).
TEST(Kallsyms, AnAliasIsNamedAsPerfNamesIt) {
  const profile::Kallsyms k(
      "ffffffff81000000 T _text\n"
      "ffffffff81000100 T memset\n"
      "ffffffff81000100 T __memset\n"
      "ffffffff81000100 T __pi_memset\n"
      "ffffffff81000200 T zzz_after\n",
      "_text", 0xffffffff81000000);
  EXPECT_EQ(k.function_at(0xffffffff81000104), "__pi_memset");
  EXPECT_EQ(k.function_at(0xffffffff81000204), "zzz_after");
}

// A loaded module's symbols follow the kernel's, in the module's own order, not by address.
TEST(Kallsyms, AModulesSymbolsOutOfOrderAreNamedByAddress) {
  const profile::Kallsyms k(
      "ffffffff81000000 T _text\n"
      "ffffffff81000100 T kernel_fn\n"
      "ffffffffc0000300 t mod_late\t[mod]\n"
      "ffffffffc0000100 t mod_early\t[mod]\n"
      "ffffffffc0000200 t mod_middle\t[mod]\n"
      "ffffffffc0000100 t mod_alias\t[mod]\n",
      "_text", 0xffffffff81000000);
  EXPECT_EQ(k.function_at(0xffffffffc0000104), "mod_alias");
  EXPECT_EQ(k.function_at(0xffffffffc0000204), "mod_middle");
  EXPECT_EQ(k.function_at(0xffffffffc0000304), "mod_late");
  EXPECT_EQ(k.function_at(0xffffffffc00000ff), "kernel_fn");
}

TEST(Kallsyms, WithoutTheReferenceSymbolNothingIsNamed) {
  const profile::Kallsyms k(kText, "_stext", 0xffffffff81000000);
  EXPECT_TRUE(k.empty());
  EXPECT_EQ(k.function_at(0xffffffff81000150), std::nullopt);
}

}  // namespace
}  // namespace pdfix
