"""Channel names from a CommunityDescription (core.status.community_names).

The descriptions are encoded by the protobuf runtime itself, from a schema declared here with status-go's field
numbers (protocol/protobuf/communities.proto and chat_identity.proto, commit c72f491): an encoder independent of
the hand-written reader under test, including fields the reader must skip (members, permissions, tags)."""
from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import given, settings
from hypothesis import strategies as st

from core.status.community_names import CommunityDescriptionError, channel_chat_names, clock_and_channels

F = descriptor_pb2.FieldDescriptorProto


def _schema():
    fd = descriptor_pb2.FileDescriptorProto(name="archivist_test_communities.proto", package="t", syntax="proto3")

    def msg(name, *fields, map_entry=False):
        m = fd.message_type.add(name=name)
        if map_entry:
            m.options.map_entry = True
        for num, fname, ftype, label, tname in fields:
            f = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                f.type_name = tname
        return m

    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    msg("ChatIdentity", (1, "clock", F.TYPE_UINT64, opt, None), (2, "ens_name", F.TYPE_STRING, opt, None),
        (4, "display_name", F.TYPE_STRING, opt, None), (5, "description", F.TYPE_STRING, opt, None))
    msg("CommunityMember", (1, "roles", F.TYPE_UINT32, rep, None))
    msg("CommunityPermissions", (1, "ens_only", F.TYPE_BOOL, opt, None), (3, "access", F.TYPE_INT32, opt, None))
    chat = msg("CommunityChat", (2, "permissions", F.TYPE_MESSAGE, opt, ".t.CommunityPermissions"),
               (3, "identity", F.TYPE_MESSAGE, opt, ".t.ChatIdentity"), (4, "category_id", F.TYPE_STRING, opt, None),
               (5, "position", F.TYPE_INT32, opt, None))
    entry = chat.nested_type.add(name="MembersEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    entry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=opt, type_name=".t.CommunityMember")
    chat.field.add(name="members", number=1, type=F.TYPE_MESSAGE, label=rep, type_name=".t.CommunityChat.MembersEntry")
    desc = msg("CommunityDescription", (1, "clock", F.TYPE_UINT64, opt, None),
               (5, "identity", F.TYPE_MESSAGE, opt, ".t.ChatIdentity"), (14, "tags", F.TYPE_STRING, rep, None),
               (11, "intro_message", F.TYPE_STRING, opt, None))
    centry = desc.nested_type.add(name="ChatsEntry")
    centry.options.map_entry = True
    centry.field.add(name="key", number=1, type=F.TYPE_STRING, label=opt)
    centry.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=opt, type_name=".t.CommunityChat")
    desc.field.add(name="chats", number=6, type=F.TYPE_MESSAGE, label=rep,
                   type_name=".t.CommunityDescription.ChatsEntry")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.CommunityDescription"))


Description = _schema()


def description_bytes(names: dict[str, str], clock: int = 7) -> bytes:
    d = Description(clock=clock, tags=["Art", "Privacy"], intro_message="welcome")
    d.identity.display_name = "The Community"        # the community's own name: not a channel
    for pos, (uuid, name) in enumerate(names.items()):
        c = d.chats[uuid]
        c.identity.display_name = name
        c.identity.description = f"all about {name}"
        c.position = pos
        c.permissions.access = 1
        c.members["0x04" + "11" * 64].roles.append(1)
    return d.SerializeToString()


def test_channel_names_and_clock():
    raw = description_bytes({"0f4a": "general", "9c1d": "random"}, clock=1234567)
    assert clock_and_channels(raw) == (1234567, {"0f4a": "general", "9c1d": "random"})
    assert channel_chat_names(raw, "0x02ABcd") == {"0x02abcd0f4a": "general", "0x02abcd9c1d": "random"}


def test_a_channel_without_a_name_is_left_out():
    d = Description(clock=1)
    d.chats["nameless"].position = 3
    d.chats["named"].identity.display_name = "news"
    assert clock_and_channels(d.SerializeToString())[1] == {"named": "news"}


def test_unprintable_names_are_not_shown():
    assert clock_and_channels(description_bytes({"a": "line\nbreak", "b": "ok"}))[1] == {"b": "ok"}


@pytest.mark.parametrize("bad,why", [
    (description_bytes({"a": "general"})[:-3], "runs past the end"),
    (b"\x32\x05\x0a\x03\xff\xfe\xfd", "codec can't decode"),          # a chat key that is not UTF-8
    (b"\x0f", "wire type 7"),
    (b"\x08", "truncated varint"),
])
def test_malformed_descriptions_are_refused_with_the_reason(bad, why):
    with pytest.raises(CommunityDescriptionError, match=why):
        clock_and_channels(bad)


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=300) | st.builds(lambda b, cut: description_bytes({"a": "x", "b": "y"})[:cut] + b,
                                           st.binary(max_size=20), st.integers(0, 60)))
def test_any_bytes_give_names_or_the_one_error(data):
    try:
        clock, names = clock_and_channels(data)
    except CommunityDescriptionError as e:
        assert str(e).startswith("not a community description: ")
    else:
        assert isinstance(clock, int) and all(isinstance(k, str) and v.isprintable() for k, v in names.items())
