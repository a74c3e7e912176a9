/* cpp_woken: tests/nodes/woken.c in C++ (zflow.hpp). A thread of its own
 * grants `count` capsules one at a time and wakes the source (wake());
 * produce() throws zf::Error(ZF_EAGAIN) while nothing is granted.
 *   summary: PATH   {"sent":N,"produce_calls":N} at the destructor */
#include <zflow/zflow.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

class CppWoken : public zf::Source
{
  public:
    explicit CppWoken(const zf::Config &cfg)
        : count_(cfg.get_int("count", 100)), summary_(cfg.get_string("summary"))
    {
        granter_ = std::thread([this] {
            for (long long i = 0; i < count_ && !quit_; i++) {
                granted_ = i + 1;
                wake();
                while (sent_ < i + 1 && !quit_ && !stopping())
                    std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
        });
    }

    ~CppWoken() override
    {
        quit_ = true;
        granter_.join();
        if (summary_.empty())
            return;
        if (FILE *f = std::fopen(summary_.c_str(), "w")) {
            std::fprintf(f, "{\"sent\":%lld,\"produce_calls\":%lld}\n", sent_.load(), calls_);
            std::fclose(f);
        }
    }

    void produce() override
    {
        calls_++;
        if (granted_ <= sent_)
            throw zf::Error(ZF_EAGAIN, "nothing granted"); /* until the granter wakes us */
        zf::Data d = allocate(8);
        *d.mutable_as<long long>() = sent_;
        sent_++;
        send(0, std::move(d));
    }

  private:
    long long count_;
    std::string summary_;
    std::atomic<long long> granted_{0}, sent_{0};
    std::atomic<bool> quit_{false};
    long long calls_ = 0;
    std::thread granter_;
};

static const zf_port_decl outputs[] = {{"out", NULL}};

ZF_CPP_NODE(CppWoken, ZF_SOURCE, zf::no_ports, outputs)
