#include "protocol/control.hpp"

#include "core/json_input.hpp"

namespace livedrp::protocol {

namespace {

using nlohmann::json;

// A short rendering of a value for an error message: a client that sent a 1 MiB string must not
// get it back in the reply.
std::string shown(const json& value) {
  return json_excerpt(value, 80);
}

// Checks "schema" and "schema_version" of a request or reply object; `what` is "request" or
// "reply".
void check_schema(const json& object, const char* what) {
  const auto schema = object.find("schema");
  if (schema == object.end())
    throw ProtocolError(std::string(what) + " lacks field 'schema' (expected \"livedrp\")");
  if (!schema->is_string() || schema->get<std::string>() != kSchemaName)
    throw ProtocolError(std::string(what) + " field 'schema' is " + shown(*schema) +
                        ", expected \"livedrp\"");
  const auto version = object.find("schema_version");
  if (version == object.end())
    throw ProtocolError(std::string(what) + " lacks field 'schema_version' (expected " +
                        std::to_string(kSchemaVersion) + ")");
  if (!version->is_number_integer() || version->get<long long>() != kSchemaVersion)
    throw ProtocolError(std::string(what) + " field 'schema_version' is " + shown(*version) +
                        "; this livedrp speaks version " + std::to_string(kSchemaVersion));
}

json parse_object(std::string_view bytes, const char* what) {
  std::string error;
  std::optional<json> parsed = try_parse_json(bytes, error);
  if (!parsed) throw ProtocolError(std::string(what) + " is " + error);
  json object = std::move(*parsed);
  if (!object.is_object())
    throw ProtocolError(std::string(what) + " must be a JSON object, got " +
                        std::string(object.type_name()));
  return object;
}

json envelope() {
  return {{"schema", kSchemaName}, {"schema_version", kSchemaVersion}};
}

}  // namespace

json make_control_request(std::string_view name, const json& fields) {
  if (!fields.is_object())
    throw ProtocolError("fields of request '" + std::string(name) +
                        "' must be a JSON object, got " + shown(fields));
  json request = fields;
  request.update(envelope());
  request["request"] = name;
  return request;
}

json make_control_ok(const json& result) {
  json reply = envelope();
  reply["ok"] = true;
  reply["result"] = result;
  return reply;
}

json make_control_error(const std::string& error) {
  json reply = envelope();
  reply["ok"] = false;
  reply["error"] = error;
  return reply;
}

ControlRequest parse_control_request(std::string_view bytes) {
  json object = parse_object(bytes, "request");
  check_schema(object, "request");
  const auto name = object.find("request");
  if (name == object.end())
    throw ProtocolError("request lacks field 'request' (the request name, e.g. \"status\")");
  if (!name->is_string() || name->get_ref<const std::string&>().empty())
    throw ProtocolError("request field 'request' must be a non-empty string, got " + shown(*name));
  ControlRequest request;
  request.name = name->get<std::string>();
  request.body = std::move(object);
  return request;
}

json parse_control_reply(std::string_view bytes) {
  json reply = parse_object(bytes, "reply");
  check_schema(reply, "reply");
  const auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean())
    throw ProtocolError("reply field 'ok' must be true or false, got " +
                        (ok == reply.end() ? std::string("nothing") : shown(*ok)));
  if (ok->get<bool>()) {
    const auto result = reply.find("result");
    if (result == reply.end() || !result->is_object())
      throw ProtocolError("reply with ok=true lacks a 'result' object");
  } else {
    const auto error = reply.find("error");
    if (error == reply.end() || !error->is_string())
      throw ProtocolError("reply with ok=false lacks an 'error' string");
  }
  return reply;
}

}  // namespace livedrp::protocol
