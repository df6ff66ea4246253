// The two questions every use of this machine as evidence asks (resolve/host_identity.h): is the
// recording this host's as it runs now, and of this boot? Each fact the recording gives can say
// no; a hostname alone never says yes.
#include "resolve/host_identity.h"

#include <gtest/gtest.h>

#include <string>

#include "fixture/fake_host.h"
#include "fixture/resolve_files.h"

namespace pdfix::resolve {
namespace {

using format::BuildId;

RecordedPlace place_of(const Recording& rec) {
  return {rec.hostname, rec.osrelease, rec.kernel_text, rec.table};
}

HostIdentity identity(const Recording& rec, const testing::FakeHost& host) {
  return HostIdentity(place_of(rec), rec.started_at, host);
}

// This boot of a host that knows its kernel's id and when it booted, and a recording made in it.
class HostIdentityTest : public ::testing::Test {
 protected:
  HostIdentityTest() {
    host_.kernel_id = BuildId::from_hex(std::string(40, 'e'));
    host_.booted_at = int64_t{2'000'000'000} * kSecond;
    rec_ = this_boot(host_);
    rec_.started_at = *host_.booted_at + kSecond;
    rec_.add("[kernel.kallsyms]", std::string(40, 'e'), /*misc=*/1);
  }
  std::string why(const Recording& rec) const {
    return identity(rec, host_).elsewhere().value_or("");
  }
  testing::FakeHost host_;
  Recording rec_;
};

TEST_F(HostIdentityTest, EveryFactTheRecordingGivesCanSayItIsAnotherHost) {
  EXPECT_EQ(identity(rec_, host_).elsewhere(), std::nullopt);
  EXPECT_TRUE(identity(rec_, host_).same_host());
  Recording unnamed = rec_;
  unnamed.hostname = "";
  EXPECT_EQ(why(unnamed), "the recording names no host");
  Recording name = rec_;
  name.hostname = "other";
  EXPECT_EQ(why(name), "recorded on other, this is recorder");
  Recording release = rec_;
  release.osrelease = "6.12.0-other";
  EXPECT_EQ(why(release), "recorded under kernel 6.12.0-other, this host runs 6.1.0-test");
  Recording build = rec_;
  build.table.clear();
  build.add("[kernel.kallsyms]", std::string(40, 'f'), /*misc=*/1);
  EXPECT_EQ(why(build), "recorded under kernel build " + std::string(40, 'f') +
                            ", this host runs " + std::string(40, 'e'));
  Recording kaslr = rec_;
  kaslr.kernel_text = *host_.text + 0x200000;
  EXPECT_EQ(why(kaslr), "recorded in another boot (the kernel's KASLR base differs)");
  Recording before = rec_;
  before.started_at = *host_.booted_at - kSecond;
  EXPECT_EQ(why(before), "recorded before this host's last boot");
  for (const Recording* other : {&unnamed, &name, &release, &build, &kaslr, &before}) {
    EXPECT_FALSE(identity(*other, host_).same_host()) << why(*other);
    EXPECT_FALSE(identity(*other, host_).same_boot()) << why(*other);
  }
  // A guest's kernel entry says nothing of the host's kernel.
  Recording guest = rec_;
  guest.add("[kernel.kallsyms]", std::string(40, 'f'), /*misc=*/4);
  guest.table.back().pid = 1;
  EXPECT_TRUE(identity(guest, host_).same_host()) << why(guest);
}

TEST_F(HostIdentityTest, TheSameBootIsShownByTheKernelNotByTheHostname) {
  EXPECT_TRUE(identity(rec_, host_).same_boot());
  // Only the hostname: nothing contradicts this host, but nothing shows the boot.
  Recording named = rec_;
  named.osrelease = "";
  named.kernel_text.reset();
  named.table.clear();
  named.started_at.reset();
  EXPECT_TRUE(identity(named, host_).same_host());
  EXPECT_FALSE(identity(named, host_).same_boot());
  Recording no_release = rec_;
  no_release.osrelease = "";
  EXPECT_FALSE(identity(no_release, host_).same_boot());
  Recording no_base = rec_;
  no_base.kernel_text.reset();
  EXPECT_FALSE(identity(no_base, host_).same_boot());
  testing::FakeHost hidden = host_;  // kptr_restrict: this host shows no kernel address
  hidden.text.reset();
  EXPECT_FALSE(identity(rec_, hidden).same_boot());
  // Without KASLR the base is the same at every boot: the start time tells the earlier boot.
  Recording earlier = rec_;
  earlier.started_at = *host_.booted_at - 3600 * kSecond;
  EXPECT_FALSE(identity(earlier, host_).same_boot());
}

}  // namespace
}  // namespace pdfix::resolve
