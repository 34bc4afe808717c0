// amf_bench: decode and encode throughput on the four shared workloads, against a memcpy
// of the same bytes measured in the same run.
//
//   amf_bench [--workloads=DIR] [Google Benchmark flags]
//
// The workloads are found in DIR, $AMFGATE_BENCH_DIR, or ../shared/bench from the project
// root (see ../shared/bench/README.md for what each holds). Decode cases check once that
// what they decode equals the value built from the README's rules; encode cases check that
// value against the decoded file, then encode it and compare the bytes.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "amf/decode.hpp"
#include "amf/encode.hpp"

namespace {

std::string workload_dir;

std::string load(const std::string& name) {
  std::ifstream f(workload_dir + "/" + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// ------------------------------------------------------------- values from the README

constexpr const char* tag_names[] = {"red", "green", "blue", "small", "large", "sale", "new"};

// W1 (AMF3, sealed class, int id) or W4 (AMF0 typed objects, every number a double).
amf::value products(amf::document& doc, bool amf0) {
  const amf::traits* t = amf0 ? doc.make_traits("com.example.Product", true)
                              : doc.make_traits("com.example.Product", false,
                                                {"created", "id", "name", "price", "tags"});
  amf::array_node* all = doc.array(10000);
  for (int i = 0; i < 10000; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "product-%04d", i % 100);
    amf::array_node* tags = doc.array(3);
    for (int k = 0; k < 3; ++k) tags->dense.push_back(doc.string(tag_names[(i + k) % 7]));
    const amf::value fields[] = {
        doc.date(1700000000000.0 + i * 1000.0),
        amf0 ? amf::value::number(i) : amf::value::integer(i),
        doc.string(name),
        amf::value::number((i % 1000) * 1.25 + 0.99),
        amf::value::of(tags),
    };
    amf::object_node* o = doc.object(t);
    if (amf0) {
      const char* names[] = {"created", "id", "name", "price", "tags"};
      for (int k = 0; k < 5; ++k) o->dynamic.push_back({names[k], fields[k]});
    } else {
      o->sealed.assign(std::begin(fields), std::end(fields));
    }
    all->dense.push_back(amf::value::of(o));
  }
  return amf::value::of(all);
}

amf::value byte_array(amf::document& doc) {
  std::vector<std::byte> b(1 << 20);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::byte>((i * 31 + 7) & 0xFF);
  return amf::value::of(doc.bytes(b));
}

amf::value integers(amf::document& doc) {
  constexpr std::int64_t lo[] = {0, 128, 16384, 2097152};
  constexpr std::int64_t hi[] = {127, 16383, 2097151, 268435455};
  amf::array_node* a = doc.array(100000);
  for (std::int64_t i = 0; i < 100000; ++i) {
    std::int64_t l = lo[i % 4], h = hi[i % 4];
    if (i % 8 == 7) {
      l = -(std::int64_t{1} << 28);
      h = -1;
    }
    a->dense.push_back(
        amf::value::integer(static_cast<std::int32_t>(l + (i * 2654435761LL) % (h - l + 1))));
  }
  return amf::value::of(a);
}

struct workload {
  const char* name;
  const char* file;
  bool amf3;
  amf::value (*build)(amf::document&);
};
const workload workloads[] = {
    {"W1", "W1.amf", true, [](amf::document& d) { return products(d, false); }},
    {"W2", "W2.amf", true, byte_array},
    {"W3", "W3.amf", true, integers},
    {"W4", "W4.amf", false, [](amf::document& d) { return products(d, true); }},
};

// ------------------------------------------------------------------------ benchmarks

void bench_decode(benchmark::State& state, const workload& w) {
  const std::string in = load(w.file);
  {  // what the decoder returns is the value the README's rules describe (checked once)
    amf::document doc, reference;
    const amf::value v = w.amf3 ? amf::decode_amf3(amf::as_bytes(in), doc)
                                : amf::decode_amf0(amf::as_bytes(in), doc);
    if (!amf::equivalent(v, w.build(reference))) {
      state.SkipWithError("the decoded value differs from the one the README rules build");
      return;
    }
  }
  for (auto _ : state) {
    amf::document doc(in.size() * 2);
    amf::decode_error ec;
    amf::value v = w.amf3 ? amf::decode_amf3(amf::as_bytes(in), doc, ec)
                          : amf::decode_amf0(amf::as_bytes(in), doc, ec);
    if (ec) {
      state.SkipWithError(ec.message().c_str());
      break;
    }
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in.size()));
}

void bench_encode(benchmark::State& state, const workload& w) {
  const std::string in = load(w.file);
  amf::document doc;
  const amf::value v = w.build(doc);
  amf::document reference;
  const amf::value decoded = w.amf3 ? amf::decode_amf3(amf::as_bytes(in), reference)
                                    : amf::decode_amf0(amf::as_bytes(in), reference);
  if (!amf::equivalent(v, decoded)) {
    state.SkipWithError("the value built from the README rules differs from the file");
    return;
  }
  std::string out;
  out.reserve(in.size());
  for (auto _ : state) {
    out.clear();
    w.amf3 ? amf::encode_amf3(v, out) : amf::encode_amf0(v, out);
    benchmark::DoNotOptimize(out.data());
  }
  if (out != in) state.SkipWithError("encoded bytes differ from the workload file");
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in.size()));
}

void bench_memcpy(benchmark::State& state, const workload& w) {
  const std::string in = load(w.file);
  std::string out(in.size(), '\0');
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), in.size());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * in.size()));
}

std::string find_workloads(int& argc, char** argv) {
  std::vector<std::string> candidates;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--workloads=", 12) == 0) {
      candidates.push_back(argv[i] + 12);
      for (int j = i; j + 1 < argc; ++j) argv[j] = argv[j + 1];
      --argc;
      break;
    }
  }
  if (const char* env = std::getenv("AMFGATE_BENCH_DIR")) candidates.push_back(env);
  candidates.push_back(AMFGATE_SHARED_DIR "/bench");
  for (const char* rel : {"../shared/bench", "../../shared/bench", "../../../shared/bench"}) {
    candidates.push_back(rel);
  }
  for (const auto& c : candidates) {
    if (std::filesystem::exists(c + "/W1.amf")) return c;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  workload_dir = find_workloads(argc, argv);
  if (workload_dir.empty()) {
    std::fprintf(stderr, "amf_bench: workloads not found; pass --workloads=DIR\n");
    return 1;
  }
  for (const auto& w : workloads) {
    benchmark::RegisterBenchmark((std::string("memcpy/") + w.name).c_str(), bench_memcpy, w);
    benchmark::RegisterBenchmark((std::string("decode/") + w.name).c_str(), bench_decode, w);
    benchmark::RegisterBenchmark((std::string("encode/") + w.name).c_str(), bench_encode, w);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
