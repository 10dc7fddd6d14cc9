/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ucx-srq verbs conformance: where a device sits in the machine - the
 * sysfs CPU mask format, a device's sysfs directory (a made-up one laid
 * out as the kernel lays out an HCA's), and soft0, which has none.
 */
#include "verbs_fixture.h"

#include <fstream>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace srq_test;

namespace {

bool has_cpu(const srq_verbs_cpumask_t &m, unsigned cpu)
{
    return m.bits[cpu / 64] & (1ull << (cpu % 64));
}

unsigned num_cpus(const srq_verbs_cpumask_t &m)
{
    unsigned n = 0;
    for (uint64_t w : m.bits) {
        n += __builtin_popcountll(w);
    }
    return n;
}

} // namespace

TEST(verbs_locality, parse_cpumask)
{
    srq_verbs_cpumask_t m;

    ASSERT_EQ(0, srq_verbs_parse_cpumask("00000001\n", &m));
    EXPECT_TRUE(has_cpu(m, 0));
    EXPECT_EQ(1u, num_cpus(m));

    /* the most significant word first */
    ASSERT_EQ(0, srq_verbs_parse_cpumask("ff,00000001", &m));
    EXPECT_TRUE(has_cpu(m, 0));
    for (unsigned c = 32; c < 40; ++c) {
        EXPECT_TRUE(has_cpu(m, c)) << c;
    }
    EXPECT_EQ(9u, num_cpus(m));

    ASSERT_EQ(0, srq_verbs_parse_cpumask("80000000,00000000,00000000", &m));
    EXPECT_TRUE(has_cpu(m, 95));
    EXPECT_EQ(1u, num_cpus(m));

    for (const char *bad : {"", "\n", "xyz", "1,,2", "123456789", ",1", "1,"}) {
        EXPECT_EQ(EINVAL, srq_verbs_parse_cpumask(bad, &m)) << "'" << bad << "'";
    }
}

/* /sys/class/infiniband/<dev>/device -> ../../../0000:3b:00.0, whose
 * local_cpus names the CPUs of its NUMA node */
TEST(verbs_locality, sysfs_directory_of_a_pci_device)
{
    char root[] = "/tmp/srq-sysfs.XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(root));
    std::string r(root), pci = r + "/devices/pci0000:3a/0000:3b:00.0";
    std::string dev = r + "/class/infiniband/mlx5_0";
    ASSERT_EQ(0, system(("mkdir -p '" + pci + "' '" + dev + "'").c_str()));
    ASSERT_EQ(0, symlink(pci.c_str(), (dev + "/device").c_str()));
    std::ofstream(pci + "/local_cpus") << "00000000,0000ff00\n";

    srq_verbs_locality_t loc;
    EXPECT_EQ(0, srq_verbs_sysfs_locality(dev.c_str(), &loc));
    EXPECT_STREQ("0000:3b:00.0", loc.pci_bdf);
    EXPECT_TRUE(loc.cpus_known);
    EXPECT_EQ(8u, num_cpus(loc.cpus));
    EXPECT_TRUE(has_cpu(loc.cpus, 8));
    EXPECT_TRUE(has_cpu(loc.cpus, 15));

    /* a device whose parent is no PCI function, without local_cpus */
    std::string vdev = r + "/class/infiniband/rxe0", net = r + "/devices/virtual/net/eth0";
    ASSERT_EQ(0, system(("mkdir -p '" + net + "' '" + vdev + "'").c_str()));
    ASSERT_EQ(0, symlink(net.c_str(), (vdev + "/device").c_str()));
    EXPECT_EQ(0, srq_verbs_sysfs_locality(vdev.c_str(), &loc));
    EXPECT_STREQ("", loc.pci_bdf);
    EXPECT_FALSE(loc.cpus_known);

    /* no such directory */
    EXPECT_EQ(ENOENT, srq_verbs_sysfs_locality((r + "/nothing").c_str(), &loc));
    EXPECT_EQ(0, system(("rm -rf '" + r + "'").c_str()));
}

TEST(verbs_locality, soft_device_has_none)
{
    srq_verbs_dev_t *dev = nullptr;
    srq_verbs_locality_t loc;

    /* the built-in one (ENOTSUP), or the one libibverbs lists under
     * srq-run --verbs, which has no sysfs directory */
    ASSERT_EQ(0, srq_verbs_open("soft0", &dev));
    EXPECT_NE(0, srq_verbs_dev_locality(dev, &loc));
    EXPECT_STREQ("", loc.pci_bdf);
    EXPECT_FALSE(loc.cpus_known);
    srq_verbs_close(dev);
}
