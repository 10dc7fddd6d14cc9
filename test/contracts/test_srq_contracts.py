# SPDX-License-Identifier: BSD-3-Clause
"""python/srq_contracts against the contracts of this tree (test/contracts.sh
runs it): every verb the project wraps or serves has a contract, every
contract is valid against contracts/schema.json, a trace line becomes a call
and the call C code that compiles."""
import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "python"))
import srq_contracts  # noqa: E402

CONTRACTS = os.path.join(TOP, "contracts")

# the verbs the issue "Verb contracts" lists
LISTED = """ibv_post_srq_recv ibv_post_recv ibv_post_send ibv_poll_cq
    ibv_req_notify_cq ibv_create_srq ibv_modify_srq ibv_query_srq
    ibv_destroy_srq ibv_create_qp ibv_modify_qp ibv_query_qp ibv_destroy_qp
    ibv_create_cq ibv_destroy_cq ibv_reg_mr ibv_dereg_mr ibv_alloc_pd
    ibv_dealloc_pd ibv_create_ah""".split()

# a trace line as SRQ_VERBS_TRACE writes it: two WRs, the second with two SGEs
SRQ_LINE = ("ibv_post_srq_recv srq=srq0 wr[0].wr_id=0x33 "
            "wr[0].sg_list[0].addr=buf0+3584 wr[0].sg_list[0].length=512 "
            "wr[0].sg_list[0].lkey=mr0.lkey wr[0].num_sge=1 wr[1].wr_id=0x34 "
            "wr[1].sg_list[0].addr=buf0+4096 wr[1].sg_list[0].length=16 "
            "wr[1].sg_list[0].lkey=mr0.lkey wr[1].sg_list[1].addr=buf0+4112 "
            "wr[1].sg_list[1].length=496 wr[1].sg_list[1].lkey=mr1.lkey "
            "wr[1].num_sge=2 ret=ENOMEM out.bad_wr=wr[1]")


class contracts(unittest.TestCase):
    def test_every_listed_verb(self):
        cs = srq_contracts.load(CONTRACTS)
        missing = [v for v in LISTED if v not in cs]
        self.assertEqual([], missing)
        for verb in LISTED:
            c = cs[verb].data
            self.assertTrue(c["failures"] or verb.startswith("ibv_query"), verb)
            self.assertTrue(c["postconditions"] or c.get("produces"), verb)

    def test_schema_valid(self):
        schema = srq_contracts.load_schema(CONTRACTS)
        names = sorted(f for f in os.listdir(CONTRACTS)
                       if f.startswith("ibv_") and f.endswith(".json"))
        self.assertGreaterEqual(len(names), len(LISTED))
        for name in names:
            with open(os.path.join(CONTRACTS, name)) as f:
                srq_contracts.validate(schema, json.load(f))

    # the validator fails what breaks the schema
    def test_schema_refuses(self):
        schema = srq_contracts.load_schema(CONTRACTS)
        with open(os.path.join(CONTRACTS, "ibv_post_srq_recv.json")) as f:
            good = json.load(f)
        bad = copy.deepcopy(good)
        del bad["failures"][0]["condition"]
        with self.assertRaises(srq_contracts.SchemaError):
            srq_contracts.validate(schema, bad)
        bad = copy.deepcopy(good)
        bad["failures"][0]["errno"] = 12
        with self.assertRaises(srq_contracts.SchemaError):
            srq_contracts.validate(schema, bad)

    def test_call_from_trace_line(self):
        cls = srq_contracts.verb_class("ibv_post_srq_recv")
        call = cls.from_trace(SRQ_LINE)
        self.assertEqual("ibv_post_srq_recv", call.verb)
        self.assertIsInstance(call, srq_contracts.VerbCall)
        self.assertIsInstance(call, cls)
        c = call.to_c(srq_contracts.Program())
        for want in ("ibv_post_srq_recv(srq0, ", "= 0x33;", "= 0x34;",
                     ".length = 496;", "mr1->lkey", ".num_sge = 2;",
                     "(uint64_t)(uintptr_t)buf0 + 4112", "ENOMEM"):
            self.assertIn(want, c)
        self.assertRegex(c, r"\[0\]\.next = &\w+\[1\];")

    def test_bad_trace_line(self):
        cls = srq_contracts.verb_class("ibv_post_srq_recv")
        with self.assertRaises(srq_contracts.TraceError):
            cls.from_trace(SRQ_LINE.replace("wr[1].num_sge", "wr[1].num_sges"))
        with self.assertRaises(srq_contracts.TraceError):
            srq_contracts.call_from_line("ibv_no_such_verb x=1 ret=0", 1)

    def compiles(self, text):
        """@text, a C program, builds against libibverbs (-Wall -Werror)"""
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "prog.c")
            with open(src, "w") as f:
                f.write(text)
            cc = os.environ.get("CC", "cc").split()
            r = subprocess.run(cc + ["-Wall", "-Werror", "-fsyntax-only", src],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            self.assertEqual(0, r.returncode, r.stdout.decode())

    # a whole program from a few trace lines builds against libibverbs
    def test_program_compiles(self):
        from srq_contracts import replay
        lines = ["ibv_open_device device=soft0 ret=ctx0",
                 "ibv_alloc_pd context=ctx0 ret=pd0",
                 "ibv_reg_mr pd=pd0 addr=buf0 length=8192 "
                 "access=IBV_ACCESS_LOCAL_WRITE ret=mr0",
                 "ibv_reg_mr pd=pd0 addr=buf1 length=4096 "
                 "access=IBV_ACCESS_LOCAL_WRITE ret=mr1",
                 "ibv_create_srq pd=pd0 srq_init_attr.srq_context=0 "
                 "srq_init_attr.attr.max_wr=1 srq_init_attr.attr.max_sge=2 "
                 "srq_init_attr.attr.srq_limit=0 ret=srq0",
                 SRQ_LINE.replace("mr1.lkey", "mr0.lkey")]
        text = replay.program(lines, "test", CONTRACTS)
        self.compiles(text)

    # a parent domain replays as one: its allocators as the replay's own
    # (the traced addresses are the traced process's), and what is made
    # in it names it, not its protection PD
    def test_parent_domain_program(self):
        from srq_contracts import replay
        lines = ["ibv_open_device device=soft0 ret=ctx0",
                 "ibv_alloc_pd context=ctx0 ret=pd0",
                 "ibv_alloc_td context=ctx0 init_attr.comp_mask=0 ret=td0",
                 "ibv_alloc_parent_domain context=ctx0 attr.pd=pd0 attr.td=td0 "
                 "attr.comp_mask=IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS "
                 "attr.alloc=given attr.free=given ret=pd1",
                 "ibv_alloc_parent_domain context=ctx0 attr.pd=pd1 attr.td=NULL "
                 "attr.comp_mask=0 ret=NULL errno=EINVAL",
                 "ibv_create_srq pd=pd1 srq_init_attr.srq_context=0 "
                 "srq_init_attr.attr.max_wr=1 srq_init_attr.attr.max_sge=1 "
                 "srq_init_attr.attr.srq_limit=0 ret=srq0",
                 "ibv_dealloc_td td=td0 ret=EBUSY"]
        text = replay.program(lines, "test", CONTRACTS)
        self.assertRegex(text, r"\.alloc = replay_cb_alloc;")
        self.assertRegex(text, r"\.free = replay_cb_free;")
        self.assertRegex(text, r"\.td = td0;")
        self.assertRegex(text, r"pd1 = \w+;")
        self.assertIn("ibv_create_srq(pd1, ", text)
        self.assertIn("ibv_dealloc_td(td0)", text)
        self.compiles(text)
        # a callback is given or NULL: a traced address would be called
        with self.assertRaises(srq_contracts.TraceError):
            srq_contracts.call_from_line(lines[3].replace("alloc=given", "alloc=0x5555"), 4)


# the head of a trace every case below builds on: a context, a PD, buffer 0
HEAD = ["ibv_open_device device=soft0 ret=ctx0",
        "ibv_alloc_pd context=ctx0 ret=pd0",
        "ibv_reg_mr pd=pd0 addr=buf0 length=8192 "
        "access=IBV_ACCESS_LOCAL_WRITE ret=mr0"]
CQ = "ibv_create_cq context=%s cqe=16 cq_context=0 channel=NULL comp_vector=0 ret=cq0"
WR = ("ibv_post_srq_recv srq=srq0 wr[0].wr_id=%s wr[0].sg_list[0].addr=%s "
      "wr[0].sg_list[0].length=%s wr[0].sg_list[0].lkey=mr0.lkey "
      "wr[0].num_sge=1 ret=0")
SRQ = ("ibv_create_srq pd=pd0 srq_init_attr.srq_context=0 "
       "srq_init_attr.attr.max_wr=1 srq_init_attr.attr.max_sge=1 "
       "srq_init_attr.attr.srq_limit=0 ret=srq0")


class replay_input(unittest.TestCase):
    """srq-verbs-replay refuses what no trace holds, with the line, before
    any C is written: bytes that are not ASCII text, a handle or buffer no
    earlier line made, a number wider than its field"""

    def replay(self, data):
        """(exit status, stderr) of `srq_contracts replay` on @data"""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.trace")
            with open(path, "wb") as f:
                f.write(data if isinstance(data, bytes) else "\n".join(data).encode())
            r = subprocess.run([sys.executable, "-m", "srq_contracts", "--contracts",
                                CONTRACTS, "replay", path, "-o", os.path.join(d, "p.c")],
                               env=dict(os.environ, PYTHONPATH=os.path.join(TOP, "python")),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            return r.returncode, r.stderr.decode(errors="replace")

    def refused(self, data, line, what):
        rc, err = self.replay(data)
        self.assertEqual(1, rc, err)
        self.assertNotIn("Traceback", err)
        self.assertRegex(err, r"t\.trace:%d: .*%s" % (line, what))

    def test_well_formed_accepted(self):
        rc, err = self.replay(HEAD + [SRQ, WR % ("0xffffffffffffffff", "buf0+64", "64")])
        self.assertEqual(0, rc, err)

    def test_not_ascii_text(self):
        self.refused(b"ibv_open_device device=soft0 ret=ctx0\n\xff\xfe ret=0\n", 2,
                     "not ASCII")

    def test_control_character(self):
        self.refused(b"ibv_open_device device=soft0 ret=ctx0\x1b[2J\n", 1, "control")

    def test_undefined_handle(self):
        self.refused(HEAD + ["ibv_alloc_pd context=ctx9 ret=pd1"], 4,
                     "ctx9 is used before")
        self.refused(HEAD + [SRQ.replace("pd=pd0", "pd=pd7")], 4, "pd7 is used before")

    def test_undefined_key_and_buffer(self):
        self.refused(HEAD + [SRQ, WR % ("1", "buf3+64", "64")], 5, "buf3 is used before")
        self.refused(HEAD + [SRQ, WR.replace("mr0.lkey", "mr4.lkey") % ("1", "buf0", "64")],
                     5, "mr4 is used before")

    def test_number_too_wide(self):
        self.refused(HEAD + [SRQ, WR % ("123456789012345678901234", "buf0", "64")], 5,
                     "does not fit in 64 bits")
        self.refused(HEAD + [SRQ, WR % ("1", "buf0", "4294967296")], 5,
                     "does not fit in 32 bits")
        self.refused(HEAD + [CQ % "ctx0" + " repeat=99999999999"], 4,
                     "does not fit in 32 bits")

    def test_missing_file(self):
        r = subprocess.run([sys.executable, "-m", "srq_contracts", "replay",
                            "/nonexistent/t.trace"],
                           env=dict(os.environ, PYTHONPATH=os.path.join(TOP, "python")),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(1, r.returncode)
        self.assertNotIn(b"Traceback", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
