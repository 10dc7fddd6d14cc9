/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gtest entry point shared by the ucx-srq test suites.
 */
#include <gtest/gtest.h>

int main(int argc, char **argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
