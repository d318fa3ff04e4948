// The run-time client reads a database made by `ktune merge` (Store::merge_from) as any other:
// the bests of two hosts' databases, each host's device answered from the merged file, the
// faster configuration where both hosts tuned the same device model.
#include <gtest/gtest.h>

#include "client_test_util.h"

namespace ktune::test {
namespace {

class ClientMerge : public ClientTest {
 protected:
  // A database of one host with one best of reduce on `device`.
  std::filesystem::path host_db(const std::string& name, const DeviceRecord& device,
                                const std::string& key, const std::string& json, double time_ms) {
    const auto path = dir_ / name;
    Store store = Store::open(path);
    BestSpec b;
    b.kernel_id = store.upsert_kernel(reduce_record());
    b.device = device;
    b.problem = {{"n", 1 << 24}};
    b.config_key = key;
    b.config_json = json;
    b.time_ms = time_ms;
    add_best(store, b);
    return path;
  }
};

TEST_F(ClientMerge, ReadsAMergedDatabase) {
  const auto a = host_db("host-a.db", h200(), "block_size=256,variant=9,elements_per_thread=8",
                         R"({"block_size": 256, "variant": 9, "elements_per_thread": 8})", 0.05);
  const auto b = host_db("host-b.db", a100(), "block_size=512,variant=8,elements_per_thread=4",
                         R"({"block_size": 512, "variant": 8, "elements_per_thread": 4})", 0.07);
  // A second H200 host found a faster configuration of the same kernel version and problem.
  const auto c = host_db("host-c.db", h200(), "block_size=128,variant=7,elements_per_thread=2",
                         R"({"block_size": 128, "variant": 7, "elements_per_thread": 2})", 0.04);
  {
    Store fleet = Store::open(db_path_);
    for (const auto& p : {a, b, c}) fleet.merge_from(p);
  }
  Client h200_client(db_path_, client_device(h200()));
  const LookupResult on_h200 = h200_client.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(on_h200) << on_h200.message;
  EXPECT_EQ(on_h200->device_match, DeviceMatch::kExactDevice);
  EXPECT_EQ(on_h200->value("block_size"), 128);
  EXPECT_DOUBLE_EQ(on_h200->measurement.time_ms, 0.04);
  EXPECT_EQ(on_h200->provenance.host, ProcessIdentity::current().host);

  Client a100_client(db_path_, client_device(a100()));
  const LookupResult on_a100 = a100_client.best("reduce", {{"n", 1 << 24}});
  ASSERT_TRUE(on_a100) << on_a100.message;
  EXPECT_EQ(on_a100->device_match, DeviceMatch::kExactDevice);
  EXPECT_EQ(on_a100->value("block_size"), 512);
}

}  // namespace
}  // namespace ktune::test
