/** The largest gRPC message the agent sends or receives, on every hop (machined, apid's proxy and listener, channels). */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** grpc-js channel and server options for that limit. */
export const messageSizeOptions = {
  "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
  "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
} as const;
