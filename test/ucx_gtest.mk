# -*- makefile -*-
# SPDX-License-Identifier: BSD-3-Clause
# test/ucx_gtest.mk - builds UCX's own gtest program, its common part and
# its UCT tests, from a configured UCX source tree, linked against the
# installed UCX libraries (the ones the plugin is built against and loads
# into), so the process has one libucs/libuct. Used by test/ucx_gtest.sh,
# which passes everything below; the compiler flags are those of UCX's own
# build (its configured Makefiles).
#
#   UCX_SRC       the configured source tree (a private copy: its
#                 uct_test.h lists rc_srq)
#   OUT           where objects and the program go
#   UCX_LIBDIR    the installed libucs/libuct/libucp/libucm
#   UCX_MODDIR    the installed transport modules (libuct_ib: test_tag.cc
#                 calls into it, as UCX's own gtest links it)
#   GTEST_SRCS    sources under test/gtest (common/, uct/, and ucp/ for
#                 UCP's tag-offload tests)
#   GTEST_LIB_SRCS  googletest's, under test/gtest/common/googletest
#   PERF_SRCS     libucxperf's (test_perf.cc runs it), under
#                 src/tools/perf/lib
#   UCX_CPPFLAGS, UCX_CFLAGS, UCX_CXXFLAGS, GTEST_CXXFLAGS, PERF_CXXFLAGS,
#   OPENMP_CFLAGS, LDFLAGS_DYNAMIC_LIST_DATA, IBVERBS_LIBS   UCX's flags
#   FLAGS_STAMP   a file that changes when any of the above does

G    = $(UCX_SRC)/test/gtest
PERF = $(UCX_SRC)/src/tools/perf/lib

CPPFLAGS = -DHAVE_CONFIG_H $(UCX_CPPFLAGS) -DTOP_SRCDIR=\"$(UCX_SRC)\" \
           -I$(UCX_SRC)/src -I$(UCX_SRC) -I$(UCX_SRC)/test -I$(G) \
           -DGTEST_UCM_HOOK_LIB_DIR=\"$(OUT)/no-ucm-hooks\"
CXXFLAGS = $(UCX_CXXFLAGS) $(GTEST_CXXFLAGS) -std=c++11 $(OPENMP_CFLAGS)

OBJS = $(patsubst %.cc,$(OUT)/obj/gtest/%.o,$(GTEST_SRCS)) \
       $(patsubst %.cc,$(OUT)/obj/googletest/%.o,$(GTEST_LIB_SRCS)) \
       $(patsubst %,$(OUT)/obj/perf/%.o,$(basename $(PERF_SRCS)))

all: $(OUT)/gtest

# linked to a temporary name and renamed: a run never sees half a program
$(OUT)/gtest: $(OBJS)
	$(CXX) $(OPENMP_CFLAGS) -o $@.tmp $(OBJS) $(LDFLAGS_DYNAMIC_LIST_DATA) \
	    -L$(UCX_LIBDIR) -L$(UCX_MODDIR) -Wl,-rpath,$(UCX_MODDIR) \
	    -luct_ib -lucp -luct -lucs -lucm $(IBVERBS_LIBS) -ldl -lpthread
	mv -f $@.tmp $@

$(OUT)/obj/gtest/%.o: $(G)/%.cc $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -MMD -MP $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(OUT)/obj/googletest/%.o: $(G)/common/googletest/%.cc $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -MMD -MP $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

# libucxperf is not installed: its sources are compiled in, as UCX links it
$(OUT)/obj/perf/%.o: $(PERF)/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -MMD -MP -DHAVE_CONFIG_H $(UCX_CPPFLAGS) -I$(UCX_SRC)/src \
	    -I$(UCX_SRC) $(UCX_CFLAGS) $(OPENMP_CFLAGS) -c $< -o $@

$(OUT)/obj/perf/%.o: $(PERF)/%.cc $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CXX) -MMD -MP -DHAVE_CONFIG_H $(UCX_CPPFLAGS) -I$(UCX_SRC)/src \
	    -I$(UCX_SRC) $(UCX_CXXFLAGS) $(OPENMP_CFLAGS) -nostdlib \
	    $(PERF_CXXFLAGS) -std=c++11 -c $< -o $@

-include $(OBJS:.o=.d)

.PHONY: all
