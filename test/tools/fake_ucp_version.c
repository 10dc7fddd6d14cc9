/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in libucp.so.0 of "another UCX release", for the version-guard
 * test: it exports only ucp_get_version and reports UCX 1.99.0.
 */
void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release)
{
    *major   = 1;
    *minor   = 99;
    *release = 0;
}
