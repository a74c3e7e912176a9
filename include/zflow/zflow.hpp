/*
 * zflow — header-only C++17 wrapper over the C API (zflow.h).
 *
 *   zf::Data      RAII over a capsule: copy = one more reference, move =
 *                 transfer, destructor = zf_data_unref. Nothing is ever
 *                 copied byte-wise except by mutable_data() on a shared
 *                 capsule (copy on write, as zf_data_mut).
 *   zf::Config    a read-only view over a node's configuration.
 *   zf::Source, zf::Operator, zf::Sink
 *                 node base classes; ZF_CPP_NODE(Class, kind, inputs,
 *                 outputs) exports the C declaration (zf_node_declare).
 *
 * Exceptions never cross the C ABI: an exception escaping a node's
 * constructor, produce() or on_input() becomes ZF_ENODE, counted by the
 * runtime like any error, with its what() given to zf_node_set_error.
 * Release callbacks given to Data::wrap must not throw (an exception
 * escaping one is swallowed: it runs on whatever thread drops the last
 * reference, inside the runtime).
 *
 * See docs/cpp.md.
 */
#ifndef ZFLOW_HPP
#define ZFLOW_HPP

#include <zflow/zflow.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#if defined(__GNUC__)
#define ZF_CPP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ZF_CPP_PRINTF(f, a)
#endif

namespace zf
{

/** A failed zflow call, with its code and zf_last_error()'s detail. */
class Error : public std::runtime_error
{
  public:
    Error(zf_err code, const std::string &what) : std::runtime_error(what), code_(code) {}
    /** Build from the code and the calling thread's zf_last_error(). */
    explicit Error(zf_err code) : Error(code, message(code)) {}
    zf_err code() const noexcept { return code_; }

  private:
    static std::string message(zf_err code)
    {
        std::string s = zf_errname(code);
        const char *detail = zf_last_error();
        s += ": ";
        s += detail && *detail ? detail : zf_strerror(code);
        return s;
    }
    zf_err code_;
};

namespace detail
{
inline void check(zf_err e)
{
    if (e != ZF_OK)
        throw Error(e);
}

/* The heap-allocated release callable of Data::wrap. */
template <class F> struct Releaser {
    F fn;
    void *ptr;
    static void trampoline(void *arg) noexcept
    {
        auto *self = static_cast<Releaser *>(arg);
        try {
            if constexpr (std::is_invocable_v<F &, void *>)
                self->fn(self->ptr);
            else
                self->fn();
        } catch (...) {
            /* Nowhere to report it: this runs inside the runtime, on the
             * thread that dropped the last reference. */
        }
        delete self;
    }
};
} // namespace detail

/* ------------------------------------------------------------------ */
/* Data: a capsule handle                                              */
/* ------------------------------------------------------------------ */

/** An owning handle on one capsule reference (or empty). */
class Data
{
  public:
    Data() noexcept = default;
    ~Data() { zf_data_unref(d_); }

    /** Copy: one more reference to the same buffer (zf_data_ref); the
     *  bytes are not copied. The capsule is shared (read-only) from then. */
    Data(const Data &o) noexcept : d_(o.d_ ? zf_data_ref(o.d_) : nullptr) {}
    Data &operator=(const Data &o) noexcept
    {
        if (this != &o) {
            zf_data *n = o.d_ ? zf_data_ref(o.d_) : nullptr;
            zf_data_unref(d_);
            d_ = n;
        }
        return *this;
    }
    /** Move: the reference is transferred; `o` is empty afterwards. */
    Data(Data &&o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
    Data &operator=(Data &&o) noexcept
    {
        if (this != &o) {
            zf_data_unref(d_);
            d_ = std::exchange(o.d_, nullptr);
        }
        return *this;
    }

    /** Take ownership of a reference the caller owns (e.g. *d in a C
     *  on_input, or the result of zf_data_alloc). */
    static Data adopt(zf_data *d) noexcept
    {
        Data r;
        r.d_ = d;
        return r;
    }
    /** A new reference to a capsule the caller keeps owning. */
    static Data share(zf_data *d) noexcept { return adopt(d ? zf_data_ref(d) : nullptr); }

    /** A unique, writable capsule of `len` bytes from the node's pool.
     *  Throws zf::Error (ZF_ENOMEM when the instance's memory cap is hit). */
    static Data allocate(zf_node *node, std::size_t len)
    {
        zf_data *d = nullptr;
        detail::check(zf_data_alloc(node, len, &d));
        return adopt(d);
    }

    /** Pin memory the caller owns, without copying it. `release` is any
     *  callable, invoked exactly once (with no argument, or with `ptr` if it
     *  takes a void*) on whatever thread drops the last reference anywhere.
     *  It is copied or moved to the heap: a lambda capturing a
     *  std::shared_ptr keeps the buffer alive until then. On failure the
     *  callable is destroyed without being called and zf::Error is thrown. */
    template <class F> static Data wrap(void *ptr, std::size_t len, F &&release)
    {
        using R = detail::Releaser<std::decay_t<F>>;
        auto *r = new R{std::forward<F>(release), ptr};
        zf_data *d = nullptr;
        zf_err e = zf_data_wrap(ptr, len, &R::trampoline, r, &d);
        if (e != ZF_OK) {
            Error err(e);
            delete r;
            throw err;
        }
        return adopt(d);
    }
    template <class F> static Data wrap(const void *ptr, std::size_t len, F &&release)
    {
        /* The capsule never writes through a wrapped pointer unless it is
         * unique and the caller asks (mutable_data). */
        return wrap(const_cast<void *>(ptr), len, std::forward<F>(release));
    }

    /** Memory that lives as long as the process (globals, literals). */
    static Data from_static(const void *ptr, std::size_t len)
    {
        zf_data *d = nullptr;
        detail::check(zf_data_static(ptr, len, &d));
        return adopt(d);
    }

    /** The bytes (read-only: the capsule may be shared); nullptr if empty. */
    const void *data() const noexcept { return d_ ? zf_data_ptr(d_) : nullptr; }
    const std::uint8_t *bytes() const noexcept { return static_cast<const std::uint8_t *>(data()); }
    /** The bytes as a T (the caller vouches for the layout and the size). */
    template <class T> const T *as() const noexcept { return static_cast<const T *>(data()); }
    std::size_t size() const noexcept { return d_ ? zf_data_len(d_) : 0; }
    bool empty() const noexcept { return size() == 0; }

    /** Writable bytes. A unique capsule gives its own buffer; a shared one
     *  is first copied into a unique one (copy on write, zf_data_mut) and
     *  this handle then refers to the copy; other holders keep the
     *  original. Throws zf::Error(ZF_EINVAL) when empty, ZF_ENOMEM when the
     *  copy cannot be allocated. */
    void *mutable_data()
    {
        if (!d_)
            throw Error(ZF_EINVAL, "zf::Data::mutable_data: empty handle");
        void *p = zf_data_mut(&d_);
        if (!p)
            throw Error(ZF_ENOMEM, "zf::Data::mutable_data: no memory for the copy on write");
        return p;
    }
    template <class T> T *mutable_as() { return static_cast<T *>(mutable_data()); }

    /** Metadata (0 when empty). */
    std::uint64_t timestamp() const noexcept { return d_ ? zf_data_timestamp(d_) : 0; }
    std::uint64_t seq() const noexcept { return d_ ? zf_data_seq(d_) : 0; }
    /** Setters need a unique capsule: zf::Error(ZF_ESTATE) otherwise. */
    void set_timestamp(std::uint64_t ns)
    {
        detail::check(zf_data_set_timestamp(get_or_throw(), ns));
    }
    void set_seq(std::uint64_t seq) { detail::check(zf_data_set_seq(get_or_throw(), seq)); }
    /** Shrink (or grow within capacity) a unique capsule. */
    void resize(std::size_t len) { detail::check(zf_data_set_len(get_or_throw(), len)); }

    /** References to the capsule (a snapshot); 0 when empty. */
    unsigned use_count() const noexcept { return d_ ? zf_data_refcount(d_) : 0; }
    bool unique() const noexcept { return use_count() == 1; }

    /** The C handle, still owned by this object. */
    zf_data *get() const noexcept { return d_; }
    /** Give up ownership: the caller owns the returned reference (or NULL)
     *  and this handle is empty. */
    zf_data *release() noexcept { return std::exchange(d_, nullptr); }
    /** Drop the reference now. */
    void reset() noexcept { zf_data_unref(std::exchange(d_, nullptr)); }

    explicit operator bool() const noexcept { return d_ != nullptr; }

  private:
    zf_data *get_or_throw() const
    {
        if (!d_)
            throw Error(ZF_EINVAL, "zf::Data: empty handle");
        return d_;
    }
    zf_data *d_ = nullptr;
};

/* ------------------------------------------------------------------ */
/* Config: a view over zf_config                                       */
/* ------------------------------------------------------------------ */

/** A non-owning view of a configuration value (a map, a sequence or a
 *  scalar). Valid while the node lives (until its destructor returns). */
class Config
{
  public:
    Config() noexcept = default;
    explicit Config(const zf_config *c) noexcept : c_(c) {}

    zf_config_kind kind() const noexcept { return zf_config_kind_of(c_); }
    explicit operator bool() const noexcept { return c_ && kind() != ZF_CFG_NULL; }
    const zf_config *get() const noexcept { return c_; }

    /** Member `key` ("a.b" descends maps); an empty view when absent. */
    Config operator[](const char *key) const noexcept { return Config(zf_config_get(c_, key)); }
    Config operator[](const std::string &key) const noexcept { return (*this)[key.c_str()]; }
    bool has(const char *key) const noexcept { return bool((*this)[key]); }

    /** Entries of a map or sequence. */
    std::size_t size() const noexcept { return zf_config_len(c_); }
    Config at(std::size_t i) const noexcept { return Config(zf_config_at(c_, i)); }
    /** Key of map entry i ("" if none). */
    std::string_view key_at(std::size_t i) const noexcept
    {
        const char *k = zf_config_key_at(c_, i);
        return k ? k : "";
    }
    /** A scalar's source text ("" if not a scalar). */
    std::string_view text() const noexcept
    {
        const char *t = zf_config_text(c_);
        return t ? t : "";
    }

    /** Typed lookups of `key` with a default when absent; a value of the
     *  wrong kind throws zf::Error(ZF_ETYPE) naming the key. An empty key
     *  reads this value itself. */
    std::string get_string(const char *key, const char *def = "") const
    {
        const char *out = def;
        detail::check(zf_config_string(c_, key, def, &out));
        return out ? out : "";
    }
    std::int64_t get_int(const char *key, std::int64_t def = 0) const
    {
        std::int64_t out = def;
        detail::check(zf_config_int(c_, key, def, &out));
        return out;
    }
    double get_float(const char *key, double def = 0.0) const
    {
        double out = def;
        detail::check(zf_config_float(c_, key, def, &out));
        return out;
    }
    bool get_bool(const char *key, bool def = false) const
    {
        bool out = def;
        detail::check(zf_config_bool(c_, key, def, &out));
        return out;
    }
    /** get<T>(key, def) for bool, integers, floating point and strings. */
    template <class T> T get(const char *key, T def) const
    {
        if constexpr (std::is_same_v<T, bool>)
            return get_bool(key, def);
        else if constexpr (std::is_integral_v<T>)
            return static_cast<T>(get_int(key, static_cast<std::int64_t>(def)));
        else if constexpr (std::is_floating_point_v<T>)
            return static_cast<T>(get_float(key, static_cast<double>(def)));
        else
            return T(get_string(key, std::string(def).c_str()));
    }

  private:
    const zf_config *c_ = nullptr;
};

/* ------------------------------------------------------------------ */
/* Nodes                                                               */
/* ------------------------------------------------------------------ */

class Node;

namespace detail
{
/* The node being constructed on this thread (set by the init trampoline),
 * so that base-class constructors need no argument. */
inline zf_node *&constructing()
{
    static thread_local zf_node *n = nullptr;
    return n;
}
} // namespace detail

/** What every node can do. Derive from Source, Operator or Sink. In the
 *  derived constructor the node is fully usable: config(), output(name),
 *  log(), allocate(). */
class Node
{
  public:
    Node(const Node &) = delete;
    Node &operator=(const Node &) = delete;
    virtual ~Node() = default;

    /** The C node handle. */
    zf_node *handle() const noexcept { return node_; }
    /** The node's (flattened) id. */
    const char *id() const noexcept { return zf_node_id(node_); }
    /** The node's merged configuration. */
    Config config() const noexcept { return Config(zf_node_config(node_)); }
    /** True once the instance stops (threads of a source should return). */
    bool stopping() const noexcept { return zf_node_stopping(node_); }
    /** Call this source's produce again now (zf_node_wake): ends the wait
     *  of a produce that returned ZF_EAGAIN. Any thread. */
    void wake() const noexcept { zf_node_wake(node_); }

    /** Port indices by name; zf::Error(ZF_ENOTFOUND) if there is none. */
    unsigned input(const char *name) const
    {
        return port(zf_node_input(node_, name), "input", name);
    }
    unsigned output(const char *name) const
    {
        return port(zf_node_output(node_, name), "output", name);
    }

    /** A unique, writable capsule from the instance's pool. */
    Data allocate(std::size_t len) const { return Data::allocate(node_, len); }

    /** printf-style logging through the process logger ("node <id>"). */
    void log(zf_log_level level, const char *fmt, ...) const ZF_CPP_PRINTF(3, 4)
    {
        va_list ap;
        va_start(ap, fmt);
        vlog(level, fmt, ap);
        va_end(ap);
    }
    void log(zf_log_level level, const std::string &msg) const
    {
        zf_node_log(node_, level, "%s", msg.c_str());
    }
    void info(const std::string &msg) const { log(ZF_LOG_INFO, msg); }
    void warn(const std::string &msg) const { log(ZF_LOG_WARN, msg); }
    void error(const std::string &msg) const { log(ZF_LOG_ERROR, msg); }
    void debug(const std::string &msg) const { log(ZF_LOG_DEBUG, msg); }

  protected:
    /** Picks up the node being constructed (see ZF_CPP_NODE). */
    Node() : node_(detail::constructing())
    {
        if (!node_)
            throw Error(ZF_ESTATE, "a zf::Node is constructed by the runtime (ZF_CPP_NODE) only");
    }

    /** Send on an output port, consuming `d` (empty afterwards, on success
     *  and on error alike). Returns zf_send's code: inside a callback it
     *  never waits; ZF_ECLOSED while the instance stops. */
    zf_err send(unsigned port, Data &&d) noexcept
    {
        zf_data *p = d.release();
        return p ? zf_send(node_, port, &p) : ZF_EINVAL;
    }
    zf_err send(const std::string &port_name, Data &&d) noexcept
    {
        int p = zf_node_output(node_, port_name.c_str());
        if (p < 0) {
            d.reset();
            return ZF_EINVAL;
        }
        return send(static_cast<unsigned>(p), std::move(d));
    }
    /** From a thread of the node's own: wait up to timeout_ns for room. */
    zf_err send_timeout(unsigned port, Data &&d, std::int64_t timeout_ns) noexcept
    {
        zf_data *p = d.release();
        return p ? zf_send_timeout(node_, port, &p, timeout_ns) : ZF_EINVAL;
    }
    /** Never waits: ZF_EAGAIN when a `block` link is full, and `d` is kept;
     *  otherwise `d` is consumed. */
    zf_err try_send(unsigned port, Data &d) noexcept
    {
        zf_data *p = d.get();
        if (!p)
            return ZF_EINVAL;
        zf_err e = zf_try_send(node_, port, &p);
        if (!p)
            (void)d.release(); /* consumed by the runtime */
        return e;
    }

  private:
    unsigned port(int i, const char *what, const char *name) const
    {
        if (i < 0)
            throw Error(ZF_ENOTFOUND, std::string("node '") + id() + "' has no " + what +
                                          " port '" + (name ? name : "(null)") + "'");
        return static_cast<unsigned>(i);
    }
    void vlog(zf_log_level level, const char *fmt, va_list ap) const
    {
        char buf[1024];
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        zf_node_log(node_, level, "%s", buf);
    }
    zf_node *node_;
};

/** A source: produce() is called every `period`, or free-running while its
 *  outputs have room. Send with send(port, std::move(data)). A produce()
 *  with nothing to send until an event throws zf::Error(ZF_EAGAIN): the C
 *  produce returns ZF_EAGAIN, not an error, and it runs again as
 *  zf_node_decl.produce says (include/zflow/node.h): at wake(). */
class Source : public Node
{
  public:
    virtual void produce() = 0;
};

/** An operator: on_input() for every capsule arriving; it may keep the
 *  Data (copy or move it somewhere), forward it (send(port,
 *  std::move(data))) or let it go (released when the handle dies). */
class Operator : public Node
{
  public:
    virtual void on_input(unsigned port, Data data) = 0;
};

/** A sink: as an operator, without outputs. */
class Sink : public Node
{
  public:
    virtual void on_input(unsigned port, Data data) = 0;
};

/** Port lists for ZF_CPP_NODE: a zf_port_decl array, or zf::no_ports. */
struct Ports {
    const zf_port_decl *ports = nullptr;
    std::size_t n = 0;
    constexpr Ports(std::nullptr_t) noexcept {}
    template <std::size_t N> constexpr Ports(const zf_port_decl (&a)[N]) noexcept : ports(a), n(N)
    {
    }
};
inline constexpr std::nullptr_t no_ports = nullptr;

namespace detail
{
inline zf_err fail(zf_node *n, const char *where, const char *what) noexcept
{
    zf_node_set_error(n, "%s: %s", where, what);
    return ZF_ENODE;
}

/* Run a node call, turning every exception into ZF_ENODE + its what();
 * in produce, zf::Error(ZF_EAGAIN) is ZF_EAGAIN (see Source). */
template <class F> zf_err guard(zf_node *n, const char *where, F &&f, bool again = false) noexcept
{
    try {
        f();
        return ZF_OK;
    } catch (const Error &e) {
        if (again && e.code() == ZF_EAGAIN)
            return ZF_EAGAIN;
        return fail(n, where, e.what());
    } catch (const std::exception &e) {
        return fail(n, where, e.what());
    } catch (...) {
        return fail(n, where, "unknown exception (not derived from std::exception)");
    }
}

struct ConstructingGuard {
    explicit ConstructingGuard(zf_node *n) noexcept { constructing() = n; }
    ~ConstructingGuard() { constructing() = nullptr; }
};

template <class C> zf_err init(zf_node *n, void **state) noexcept
{
    return guard(n, "constructor", [&] {
        ConstructingGuard g(n);
        Node *obj;
        if constexpr (std::is_constructible_v<C, const Config &>)
            obj = new C(Config(zf_node_config(n)));
        else
            obj = new C();
        *state = obj;
    });
}

inline void fini(void *state) noexcept
{
    try {
        delete static_cast<Node *>(state);
    } catch (...) {
        /* destructors should not throw; nowhere to report it */
    }
}

template <class C> zf_err produce(void *state, zf_node *n) noexcept
{
    return guard(
        n, "produce", [&] { static_cast<C *>(static_cast<Node *>(state))->produce(); }, true);
}

template <class C> zf_err on_input(void *state, zf_node *n, unsigned port, zf_data **d) noexcept
{
    Data data = Data::adopt(*d); /* the callback owns *d: take it */
    *d = nullptr;
    return guard(n, "on_input", [&] {
        static_cast<C *>(static_cast<Node *>(state))->on_input(port, std::move(data));
    });
}

template <class C, zf_node_kind K>
zf_node_decl make_decl(const char *name, Ports inputs, Ports outputs) noexcept
{
    static_assert(K != ZF_SOURCE || std::is_base_of_v<Source, C>,
                  "a ZF_SOURCE node class must derive from zf::Source");
    static_assert(K != ZF_OPERATOR || std::is_base_of_v<Operator, C>,
                  "a ZF_OPERATOR node class must derive from zf::Operator");
    static_assert(K != ZF_SINK || std::is_base_of_v<Sink, C>,
                  "a ZF_SINK node class must derive from zf::Sink");
    zf_node_decl d{};
    d.abi = ZF_ABI_VERSION;
    d.kind = K;
    d.name = name;
    d.inputs = inputs.ports;
    d.n_inputs = inputs.n;
    d.outputs = outputs.ports;
    d.n_outputs = outputs.n;
    d.init = &init<C>;
    d.fini = &fini;
    if constexpr (K == ZF_SOURCE)
        d.produce = &produce<C>;
    else
        d.on_input = &on_input<C>;
    return d;
}
} // namespace detail

} // namespace zf

/** Export node class `Class` (deriving from zf::Source, zf::Operator or
 *  zf::Sink to match `kind`) from a node library. `inputs` and `outputs`
 *  are zf_port_decl arrays, or zf::no_ports:
 *
 *    static const zf_port_decl in[] = {{"frame", "image/raw"}};
 *    static const zf_port_decl out[] = {{"detection", "detection"}};
 *    ZF_CPP_NODE(Detect, ZF_OPERATOR, in, out)
 *
 *  Use it once per library, at namespace scope. */
#define ZF_CPP_NODE(Class, kind, inputs, outputs)                                                  \
    extern "C" __attribute__((visibility("default"))) const zf_node_decl *zf_node_declare(void);   \
    extern "C" const zf_node_decl *zf_node_declare(void)                                           \
    {                                                                                              \
        static const zf_node_decl zf_cpp_decl_ = ::zf::detail::make_decl<Class, kind>(             \
            #Class, ::zf::Ports(inputs), ::zf::Ports(outputs));                                    \
        return &zf_cpp_decl_;                                                                      \
    }

#endif /* ZFLOW_HPP */
