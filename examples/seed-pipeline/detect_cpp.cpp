/* detect (C++): the same operator as detect.c, written with zflow.hpp.
 * It reads each frame in place (the camera's buffer: no copy) and sends a
 * small detection record.
 *
 * configuration (fault injection, as detect.c):
 *   hang_on_frame: 0        hang when this frame arrives (0: never)
 *   hang_every_frames: 0    hang on every Nth frame (0: never)
 *   hang_for: forever       how long a hang lasts ("1.5s", or "forever")
 *   fail_from_frame: 0      throw for frames in
 *   fail_to_frame: 0        [fail_from_frame, fail_to_frame] (0: never)
 *
 * A failure is an exception: the runtime gets ZF_ENODE and the message. */
#include <zflow/zflow.hpp>

#include <chrono>
#include <string>
#include <thread>

/* The message formats of frame.h (a C header whose inline checksum does not
 * compile as C++): the same layout, checked by size. */
namespace seed
{
constexpr std::uint64_t FRAME_MAGIC = 0x7a66667261656d31ull; /* "zfframe1" */
struct frame_header {
    std::uint64_t magic, seq, checksum, bytes;
};
struct detection {
    std::uint64_t frame_seq, frame_checksum, frame_timestamp_ns;
    std::uint32_t objects, brightness;
};
static_assert(sizeof(frame_header) == 32 && sizeof(detection) == 32, "layout of frame.h");
} // namespace seed
using seed::detection;
using seed::frame_header;
using seed::FRAME_MAGIC;

class Detect : public zf::Operator
{
  public:
    explicit Detect(const zf::Config &cfg)
        : hang_on_(cfg.get_int("hang_on_frame")), hang_every_(cfg.get_int("hang_every_frames")),
          fail_from_(cfg.get_int("fail_from_frame")), fail_to_(cfg.get_int("fail_to_frame")),
          out_(output("detection"))
    {
        std::string hang_for = cfg.get_string("hang_for", "forever");
        if (hang_for != "forever" && zf_parse_duration(hang_for.c_str(), &hang_ns_) != ZF_OK)
            throw zf::Error(ZF_EINVAL, std::string("hang_for: ") + zf_last_error());
    }

    void on_input(unsigned, zf::Data frame) override
    {
        const auto *h = frame.as<frame_header>();
        if (frame.size() < sizeof *h || h->magic != FRAME_MAGIC)
            throw zf::Error(ZF_EINVAL, "not a frame (" + std::to_string(frame.size()) + " bytes)");
        frames_++;
        auto seq = static_cast<std::int64_t>(h->seq);
        if ((hang_on_ && seq == hang_on_) || (hang_every_ && seq % hang_every_ == 0))
            hang();
        if (fail_from_ && seq >= fail_from_ && seq <= fail_to_)
            throw zf::Error(ZF_EINVAL, "injected failure on frame " + std::to_string(seq));
        /* "Detect": sample one byte per 4 KiB page of the frame, in place. */
        const auto *px = reinterpret_cast<const unsigned char *>(h + 1);
        std::uint64_t sum = 0, count = 0;
        for (std::size_t i = 0; i < h->bytes; i += 4096, count++)
            sum += px[i];
        zf::Data out = allocate(sizeof(detection));
        auto *det = out.mutable_as<detection>();
        det->frame_seq = h->seq;
        det->frame_checksum = h->checksum;
        det->frame_timestamp_ns = frame.timestamp();
        det->brightness = count ? static_cast<std::uint32_t>(sum / count) : 0;
        det->objects = static_cast<std::uint32_t>(h->seq % 4);
        send(out_, std::move(out));
    }

  private:
    void hang() const
    {
        if (hang_ns_ < 0)
            for (;;)
                std::this_thread::sleep_for(std::chrono::seconds(1)); /* a deadlock */
        std::this_thread::sleep_for(std::chrono::nanoseconds(hang_ns_));
    }

    std::int64_t hang_on_, hang_every_, fail_from_, fail_to_;
    std::int64_t hang_ns_ = -1;
    std::uint64_t frames_ = 0;
    unsigned out_;
};

static const zf_port_decl inputs[] = {{"frame", "image/raw"}};
static const zf_port_decl outputs[] = {{"detection", "detection"}};

ZF_CPP_NODE(Detect, ZF_OPERATOR, inputs, outputs)
