"""amfgate.flex: Flex messages as Python classes, on real bytes of other implementations
(the shared corpus) and round trips."""
import pytest

import amfgate


@pytest.fixture
def flex():
    import amfgate.flex
    amfgate.flex.register()
    yield amfgate.flex
    amfgate.flex.unregister()


def body_values(shared, name):
    data = (shared / "corpus/rocketamf/request" / name).read_bytes()
    return [b.value for b in amfgate.decode_packet(data).bodies]


def test_a_flex_request_decodes_as_its_classes(shared, flex):
    [[command]] = body_values(shared, "commandMessage.bin")
    assert type(command) is flex.CommandMessage
    assert isinstance(command.operation, int) and len(command.messageId) == 36
    assert isinstance(command.headers, dict)
    [[call]] = body_values(shared, "remotingMessage.bin")
    assert type(call) is flex.RemotingMessage
    assert isinstance(call.operation, str) and call.operation
    assert isinstance(call.body, list)


def test_a_small_acknowledgement_decodes_as_the_full_class(shared, flex):
    [ack] = body_values(shared, "acknowledge-response.bin")
    assert type(ack) is flex.AcknowledgeMessage
    assert len(ack.messageId) == 36 and len(ack.clientId) == 36


def test_messages_round_trip_and_read_as_typed_objects_without_the_classes(flex):
    sent = [flex.AsyncMessage(body={"text": "hi"}, destination="chat",
                              headers={"DSSubtopic": "rooms.a"}, timestamp=flex.now_ms()),
            flex.CommandMessage(operation=flex.CommandMessage.SUBSCRIBE_OPERATION,
                                destination="chat", clientId=flex.new_id()),
            flex.ErrorMessage(faultCode="Client.Authorization", faultString="no",
                              correlationId="C1"),
            flex.RemotingMessage(operation="echo", destination="EchoService", body=[1, "a"])]
    data = amfgate.dumps(sent)
    assert amfgate.loads(data) == sent
    flex.unregister()
    plain = amfgate.loads(data)
    assert [m.alias for m in plain] == [
        "flex.messaging.messages." + n
        for n in ("AsyncMessage", "CommandMessage", "ErrorMessage", "RemotingMessage")]
    assert plain[1]["operation"] == 0 and plain[2]["faultCode"] == "Client.Authorization"
    assert plain[0]["headers"] == {"DSSubtopic": "rooms.a"}
    flex.register()


def test_a_member_the_message_lacked_reads_as_its_default(flex):
    partial = amfgate.TypedObject("flex.messaging.messages.AcknowledgeMessage",
                                  messageId="M1", body=None)
    ack = amfgate.loads(amfgate.dumps(partial))
    assert type(ack) is flex.AcknowledgeMessage
    assert ack.messageId == "M1" and ack.headers == {} and ack.correlationId == ""
    with pytest.raises(AttributeError):
        ack.nothing_of_the_kind
