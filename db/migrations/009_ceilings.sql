-- Schema 9: ceilings, a device's measured limits. docs/database.md is the contract.
--   ceilings  one row per device: its streaming-read and copy bandwidth (GB/s) and FP32 FMA peak
--             (GFLOP/s), measured on it (bench/peers --store-ceilings); NULL for a limit not
--             measured. `ktune tune --stop-at-ceiling` ends a search whose best is within a
--             fraction of them (docs/effort.md#stop-at-the-speed-of-light).
CREATE TABLE ceilings (
  device_id INTEGER PRIMARY KEY REFERENCES devices (id),
  read_gbps REAL CHECK (read_gbps IS NULL OR read_gbps > 0),
  copy_gbps REAL CHECK (copy_gbps IS NULL OR copy_gbps > 0),
  fma_gflops REAL CHECK (fma_gflops IS NULL OR fma_gflops > 0),
  measured_at TEXT NOT NULL,
  source TEXT NOT NULL
);
