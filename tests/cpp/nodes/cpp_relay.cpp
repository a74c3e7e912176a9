/* cpp_relay: a C++ test operator (zflow.hpp) forwarding its input.
 *   throw_every: 0     throw for every Nth capsule (0: never)
 *   throw: std         what to throw: std (std::runtime_error), zf
 *                      (zf::Error), int (not a std::exception)
 *   throw_in_ctor: false
 *   summary: PATH      {"seen":N,"forwarded":N,"moved_empty":N} at fini
 * It checks that a Data sent with send(port, std::move(d)) is empty
 * afterwards. */
#include <zflow/zflow.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

class CppRelay : public zf::Operator
{
  public:
    CppRelay()
        : throw_every_(config().get_int("throw_every", 0)),
          what_(config().get_string("throw", "std")), summary_(config().get_string("summary")),
          out_(output("out"))
    {
        if (config().get_bool("throw_in_ctor", false))
            throw std::invalid_argument("cpp_relay refuses to start: throw_in_ctor is set");
        info("relay ready, throwing every " + std::to_string(throw_every_));
    }

    ~CppRelay() override
    {
        if (summary_.empty())
            return;
        if (FILE *f = std::fopen(summary_.c_str(), "w")) {
            std::fprintf(f, "{\"seen\":%lld,\"forwarded\":%lld,\"moved_empty\":%lld}\n", seen_,
                         forwarded_, moved_empty_);
            std::fclose(f);
        }
    }

    void on_input(unsigned port, zf::Data data) override
    {
        (void)port;
        seen_++;
        if (throw_every_ && seen_ % throw_every_ == 0) {
            std::string msg = "boom on capsule " + std::to_string(seen_);
            if (what_ == "zf")
                throw zf::Error(ZF_EINVAL, msg);
            if (what_ == "int")
                throw 42;
            throw std::runtime_error(msg);
        }
        send(out_, std::move(data));
        forwarded_++;
        if (!data)
            moved_empty_++;
    }

  private:
    long long throw_every_;
    std::string what_, summary_;
    unsigned out_;
    long long seen_ = 0, forwarded_ = 0, moved_empty_ = 0;
};

static const zf_port_decl inputs[] = {{"in", "bytes"}};
static const zf_port_decl outputs[] = {{"out", "bytes"}};

ZF_CPP_NODE(CppRelay, ZF_OPERATOR, inputs, outputs)
