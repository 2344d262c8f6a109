// Plain-object shapes of the containerd messages the client returns (agent/containerd-api).

export interface Any {
  type_url: string;
  value: Buffer;
}

export interface Mount {
  type: string;
  source: string;
  target?: string;
  options: string[];
}

export interface Descriptor {
  media_type: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface WireTime {
  seconds: number;
  nanos: number;
}

export interface Container {
  id: string;
  labels: Record<string, string>;
  image: string;
  runtime: { name: string; options?: Any };
  spec: Any;
  snapshotter: string;
  snapshot_key: string;
  created_at?: WireTime;
  updated_at?: WireTime;
}

/** Task status (containerd.v1.types.Status). */
export enum TaskStatus {
  UNKNOWN = 0,
  CREATED = 1,
  RUNNING = 2,
  STOPPED = 3,
  PAUSED = 4,
  PAUSING = 5,
}

export interface Process {
  container_id: string;
  id: string;
  pid: number;
  status: TaskStatus;
  exit_status: number;
}

export interface Image {
  name: string;
  labels: Record<string, string>;
  target: Descriptor;
  created_at?: WireTime;
  updated_at?: WireTime;
}

export interface ContentInfo {
  digest: string;
  size: number;
  labels: Record<string, string>;
}

export interface Envelope {
  timestamp?: WireTime;
  namespace: string;
  topic: string;
  event?: Any;
}
