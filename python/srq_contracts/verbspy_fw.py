# SPDX-License-Identifier: BSD-3-Clause
"""How the rdma-fuzzing framework's lib/verbs.py calls its verb classes, as
data: what verbspy.py needs so that a generated class takes the place of
the framework's class of the same name without its callers noticing.

Read from that framework's lib/verbs.py, its scaffolds (lib/scaffolds/),
its mutator (lib/fuzz_mutate.py) and its generators: for each verb it has
a class for, the constructor's parameters in order with their defaults,
the attribute each contract parameter lives in there (`init_attr_obj` for
ibv_create_qp's qp_init_attr), the framework's MUTABLE_FIELDS and
EXPORT_FIELDS, the value wrapper the mutator expects of a field (a
FlagValue for access flags, a LocalResourceValue for a buffer) and the
pair runtime its programs use (a QP or MR announced to the peer, RTR
waiting for the pair). Nothing of the framework's code is here: only the
names of its interface, so that the classes answer to them.
"""

# contract parameter -> the framework's attribute, where the names differ;
# a struct parameter maps to (object attribute, C variable attribute)
_ALIAS = {
    "ibv_advise_mr": {"sg_list": ("sg_list", "sg_var")},
    "ibv_alloc_dm": {"context": "ctx_name", "attr": ("attr_obj", "attr_var")},
    "ibv_alloc_mw": {"type": "mw_type"},
    "ibv_alloc_parent_domain": {"attr": ("attr_obj", "attr_var")},
    "ibv_alloc_td": {"init_attr": ("attr_obj", "attr_var")},
    "ibv_bind_mw": {"mw_bind": ("mw_bind_obj", "mw_bind_var")},
    "ibv_create_ah": {"attr": ("attr_obj", "attr_var")},
    "ibv_create_cq_ex": {"@product": "cq_ex", "cq_attr": ("cq_attr_obj", "cq_attr_var")},
    "ibv_create_qp": {"qp_init_attr": ("init_attr_obj", "init_attr_var")},
    "ibv_create_qp_ex": {"qp_init_attr_ex": ("qp_attr_obj", "qp_attr_var")},
    "ibv_create_srq": {"srq_init_attr": ("srq_init_obj", "srq_init_var")},
    "ibv_create_srq_ex": {"context": "ctx_name", "srq_init_attr_ex": ("srq_attr_obj", "srq_attr_var")},
    "ibv_get_srq_num": {"srq_num": "srq_num_var"},
    "ibv_memcpy_from_dm": {"host_addr": "host"},
    "ibv_memcpy_to_dm": {"host_addr": "host"},
    "ibv_modify_qp": {"attr": ("attr_obj", "attr_var")},
    "ibv_modify_srq": {"srq_attr": ("attr_obj", "attr_var"), "srq_attr_mask": "attr_mask"},
    "ibv_open_device": {"@product": "ctx_name"},
    "ibv_open_xrcd": {"context": "ctx_var", "xrcd_init_attr": ("attr_obj", "attr_var")},
    "ibv_reg_mr_iova": {"addr": "buf"},
}

# the framework's constructors: (name, default) in order
_SIGNATURE = {
    "ibv_ack_cq_events": [("cq", None), ("nevents", None)],
    "ibv_advise_mr": [("pd", None), ("advice", None), ("flags", None), ("sg_list", []),
                      ("num_sge", None), ("sg_var", None)],
    "ibv_alloc_dm": [("ctx_name", None), ("dm", None), ("attr_obj", None)],
    "ibv_alloc_mw": [("pd", None), ("mw", None), ("mw_type", None)],
    "ibv_alloc_parent_domain": [("context", None), ("pd", None), ("parent_pd", None),
                                ("attr_var", None), ("attr_obj", None)],
    "ibv_alloc_pd": [("pd", None)],
    "ibv_alloc_td": [("td", None), ("attr_var", None), ("attr_obj", None)],
    "ibv_bind_mw": [("qp", None), ("mw", None), ("mw_bind_var", None), ("mw_bind_obj", None)],
    "ibv_close_device": [],
    "ibv_close_xrcd": [("xrcd", None)],
    "ibv_create_ah": [("pd", None), ("attr_var", None), ("ah", None), ("attr_obj", None)],
    "ibv_create_comp_channel": [("channel", None)],
    "ibv_create_cq": [("cqe", 32), ("cq_context", "NULL"), ("channel", "NULL"), ("comp_vector", 0),
                      ("cq", None)],
    "ibv_create_cq_ex": [("cq_ex", None), ("cq_attr_var", None), ("cq_attr_obj", None)],
    "ibv_create_qp": [("pd", None), ("qp", None), ("init_attr_obj", None), ("remote_qp", None)],
    "ibv_create_qp_ex": [("qp", None), ("qp_attr_var", None), ("qp_attr_obj", None), ("remote_qp", None)],
    "ibv_create_srq": [("pd", None), ("srq", None), ("srq_init_obj", None)],
    "ibv_create_srq_ex": [("ctx_name", None), ("srq", None), ("srq_attr_var", None), ("srq_attr_obj", None)],
    "ibv_dealloc_mw": [("mw", None)],
    "ibv_dealloc_pd": [("pd", None)],
    "ibv_dealloc_td": [("td", None)],
    "ibv_dereg_mr": [("mr", None)],
    "ibv_destroy_ah": [("ah", None)],
    "ibv_destroy_comp_channel": [("channel", None)],
    "ibv_destroy_cq": [("cq", None)],
    "ibv_destroy_qp": [("qp", None)],
    "ibv_destroy_srq": [("srq", None)],
    "ibv_free_dm": [("dm", None)],
    "ibv_get_srq_num": [("srq", None), ("srq_num_var", None)],
    "ibv_memcpy_from_dm": [("host", None), ("dm", None), ("dm_offset", None), ("length", None)],
    "ibv_memcpy_to_dm": [("dm", None), ("dm_offset", None), ("host", None), ("length", None)],
    "ibv_modify_qp": [("qp", None), ("attr_obj", None), ("attr_mask", None)],
    "ibv_modify_srq": [("srq", None), ("attr_var", None), ("attr_obj", None), ("attr_mask", 0)],
    "ibv_open_device": [("device", None), ("ctx_name", None)],
    "ibv_open_xrcd": [("ctx_var", None), ("xrcd", None), ("attr_var", None), ("attr_obj", None)],
    "ibv_poll_cq": [("cq", None)],
    "ibv_post_recv": [("qp", None), ("wr_obj", None), ("wr_var", None), ("bad_wr_var", None)],
    "ibv_post_send": [("qp", None), ("wr_obj", None), ("wr_var", None), ("bad_wr_var", None)],
    "ibv_post_srq_recv": [("srq", None), ("wr_obj", None), ("wr_var", None), ("bad_wr_var", None)],
    "ibv_query_qp": [("qp", None), ("attr_mask", None)],
    "ibv_query_srq": [("srq", None)],
    "ibv_reg_mr": [("pd", None), ("mr", None), ("addr", None), ("length", None), ("access", None)],
    "ibv_reg_mr_iova": [("pd", None), ("mr", None), ("buf", None), ("length", None), ("iova", None),
                        ("access", None)],
    "ibv_req_notify_cq": [("cq", None), ("solicited_only", None)],
    "ibv_rereg_mr": [("mr", None), ("flags", None), ("pd", None), ("addr", None), ("length", 0),
                     ("access", 0)],
    "ibv_resize_cq": [("cq", None), ("cqe", None)],
}

# the framework's MUTABLE_FIELDS / EXPORT_FIELDS where they are not its
# constructor's parameters in order
_MUTABLE = {
    "ibv_alloc_dm": ["dm", "attr_obj", "attr_var"],
    "ibv_alloc_td": ["td", "attr_var", "attr_obj"],
    "ibv_create_ah": ["pd", "attr_var", "ah", "attr_obj"],
    "ibv_create_cq_ex": ["cq_ex", "cq_attr_var", "cq_attr_obj"],
    "ibv_create_qp_ex": ["qp", "qp_attr_var", "qp_attr_obj"],
    "ibv_create_srq_ex": ["srq", "srq_attr_var", "srq_attr_obj"],
    "ibv_open_device": ["device"],
    "ibv_post_send": ["qp", "wr_obj"],
}
_EXPORT = {
    "ibv_advise_mr": ["pd", "advice", "flags", "sg_list", "num_sge"],
    "ibv_alloc_dm": ["dm", "attr_obj"],
    "ibv_alloc_parent_domain": ["context", "pd", "parent_pd", "attr_obj"],
    "ibv_alloc_td": ["td", "attr_obj"],
    "ibv_bind_mw": [],
    "ibv_create_ah": ["pd", "ah", "attr_obj"],
    "ibv_create_cq_ex": ["cq_ex", "cq_attr_obj"],
    "ibv_create_qp_ex": ["qp", "qp_attr_obj"],
    "ibv_create_srq_ex": ["srq", "srq_attr_obj"],
    "ibv_get_srq_num": ["srq"],
    "ibv_modify_srq": ["srq", "attr_obj", "attr_mask"],
    "ibv_open_device": ["device"],
    "ibv_post_send": ["qp", "wr_obj"],
    "ibv_rereg_mr": [],
}

# framework-only parameters: kept, and how their value is wrapped
_EXTRA = {
    "ibv_alloc_parent_domain": {"parent_pd": "const"},
    "ibv_create_qp": {"remote_qp": "local:remote_qp"},
    "ibv_create_qp_ex": {"remote_qp": "local:remote_qp"},
}

# value wrappers the framework's mutator expects of a field (by the
# framework's attribute name): flag:TYPE, enum:TYPE, local:TYPE
_WRAP = {
    "ibv_reg_mr": {"addr": "local:buf", "access": "flag:IBV_ACCESS_FLAGS_ENUM"},
    "ibv_reg_mr_iova": {"buf": "local:buf", "access": "flag:IBV_ACCESS_FLAGS_ENUM"},
    "ibv_rereg_mr": {"addr": "local:buf", "access": "flag:IBV_ACCESS_FLAGS_ENUM"},
    "ibv_modify_qp": {"attr_mask": "flag:IBV_QP_ATTR_MASK_ENUM"},
    "ibv_query_qp": {"attr_mask": "flag:IBV_QP_ATTR_MASK_ENUM"},
}

# the framework's default where its constructor puts one in place of None
_FILL = {
    "ibv_modify_qp": {"attr_mask": "IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS"},
    "ibv_reg_mr": {"length": 4096, "access": "IBV_ACCESS_LOCAL_WRITE"},
    "ibv_open_device": {"device": "dev_list", "ctx_name": "ctx"},
}

# the pair runtime of the framework's client template: QPs and MRs are
# announced to the peer, a move to RTR waits for the pair
PAIR = {"ibv_create_qp": "qp", "ibv_create_qp_ex": "qp", "ibv_reg_mr": "mr",
        "ibv_reg_mr_iova": "mr", "ibv_modify_qp": "rtr"}

# class names the framework spells otherwise than verbspy.class_name does
CLASS_NAME = {"ibv_rereg_mr": "ReRegMR"}


class Framework:
    """The framework's view of one verb (None where it has no class for it)"""

    def __init__(self, verb):
        self.verb = verb
        self.signature = _SIGNATURE[verb]
        self.alias = _ALIAS.get(verb, {})
        names = [n for n, _ in self.signature]
        self.mutable = _MUTABLE.get(verb, names)
        self.export = _EXPORT.get(verb, self.mutable)
        self.extra = _EXTRA.get(verb, {})
        self.wrap = _WRAP.get(verb, {})
        self.fill = _FILL.get(verb, {})
        self.pair = PAIR.get(verb)

    def params(self):
        return [n for n, _ in self.signature]


def framework(verb):
    return Framework(verb) if verb in _SIGNATURE else None
