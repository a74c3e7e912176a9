/* cpp_gen: a C++ test source (zflow.hpp).
 *   count: N        capsules to send (0: no limit)
 *   size: 64        payload bytes (>= 16)
 *   mode: pool      pool (Data::allocate) | wrap (a std::vector owned by a
 *                   std::shared_ptr, pinned with Data::wrap and a lambda
 *                   capturing the shared_ptr)
 *   summary: PATH   {"sent":N,"released":N,"empty_after_send":N} at fini
 * Each payload starts with its own address and a sequence number, as
 * tests/nodes/gen.c, so a C sink (count) proves nothing was copied. */
#include <zflow/zflow.hpp>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

class CppGen : public zf::Source
{
  public:
    explicit CppGen(const zf::Config &cfg)
        : count_(cfg.get_int("count", 0)), size_(cfg.get_int("size", 64)),
          wrap_(cfg.get_string("mode", "pool") == "wrap"), summary_(cfg.get_string("summary")),
          released_(std::make_shared<std::atomic<long long>>(0))
    {
        if (size_ < 16)
            throw zf::Error(ZF_EINVAL, "size must be >= 16");
    }

    ~CppGen() override
    {
        if (summary_.empty())
            return;
        if (FILE *f = std::fopen(summary_.c_str(), "w")) {
            std::fprintf(f, "{\"sent\":%lld,\"released\":%lld,\"empty_after_send\":%lld}\n", sent_,
                         released_->load(), empty_after_send_);
            std::fclose(f);
        }
    }

    void produce() override
    {
        if (count_ && sent_ >= count_)
            return;
        zf::Data d;
        if (wrap_) {
            auto buf = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(size_));
            auto released = released_;
            /* The lambda owns a reference to the buffer: it lives until the
             * last capsule reference anywhere drops. */
            d = zf::Data::wrap(buf->data(), buf->size(), [buf, released] { ++*released; });
        } else {
            d = allocate(static_cast<std::size_t>(size_));
        }
        auto *p = d.mutable_as<std::uint64_t>();
        p[0] = reinterpret_cast<std::uintptr_t>(d.data());
        p[1] = static_cast<std::uint64_t>(++sent_);
        send(0, std::move(d));
        if (!d)
            empty_after_send_++;
    }

  private:
    long long count_, size_;
    bool wrap_;
    std::string summary_;
    std::shared_ptr<std::atomic<long long>> released_;
    long long sent_ = 0, empty_after_send_ = 0;
};

static const zf_port_decl outputs[] = {{"out", "bytes"}};

ZF_CPP_NODE(CppGen, ZF_SOURCE, zf::no_ports, outputs)
