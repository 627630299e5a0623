// Client XPath filters evaluated in worker processes, within a time budget, and ended when the
// client stops waiting (issue 39).
//
// Why processes: libyang 2.1's XPath evaluator has no step limit and cannot be interrupted, and a
// filter that nests absolute paths costs N^k steps over N list entries (with 2000 interfaces,
// /if:interfaces/if:interface[count(/if:interfaces/if:interface[count(/if:interfaces/if:interface)
// > 0]) > 0] never answers). Evaluated in the server, under the store's lock, it froze every
// other session. A thread cannot be stopped; a process can.
//
// Promises:
//  - evaluate() runs a job (readview.hpp builds it: the forest the user may read, as LYB, printed
//    while the caller holds what it needs, the store's lock, and released before evaluate()) in a
//    worker that holds the server's YANG context (built from the same ModelOptions) and never
//    sees the store. The reply is what filter's in-process evaluation prints for the same data.
//  - Bounded: a job that has not answered within the budget (sending it, the worker's parse and
//    its evaluation) ends with SIGKILL and an rpc-error resource-denied naming the budget and
//    --xpath-budget-ms. `stop`, asked every 20 ms, ends it the same way (a killed session, a
//    client that hung up): nothing keeps running once evaluate() has returned or thrown.
//  - A worker that dies (libyang crashing on hostile input) fails its own request only
//    (operation-failed); dead and killed workers are replaced, the replacement starting at once.
//  - Any thread: up to `workers` jobs run at once; further ones wait for a free worker (`stop` is
//    asked meanwhile). Waiting for a worker, and for a new one to load its context (tens of ms for
//    the default models, about a second for the whole Open ROADM 2.2.1 set), is not counted in
//    the budget. Workers start at the first job, not with the server.
//  - A worker ends when its server does: at its socket's end, at once, even while evaluating.
//  - Workers run at nice 10: a filter that keeps a core busy leaves the server's own threads
//    (other sessions, logins, commits) the first claim on the CPU.
#pragma once

#include "ncstore/models.hpp"

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ncstore::netconfd {

/// Asked while a request waits: true when its client no longer does (session killed, peer gone).
using StopRequested = std::function<bool()>;

/// One XPath filter over one forest, as a worker gets it.
struct XPathJob {
    std::string lyb;      ///< the forest (LYD_LYB, with siblings); "" selects nothing
    std::string expr;     ///< the select expression, JSON prefixes (filter::xpath)
    std::uint32_t wd = 0; ///< the with-defaults print flag
    /// A top-level node ("module:name") the filter may look at but the reply leaves out (shown
    /// elsewhere in it: <get>'s /nacm with its counters); "" for none.
    std::string leaveOut;
    /// The answer is the selection as LYB (filter::xpath()'s forest of copies; "" for nothing)
    /// instead of XML; `wd` and `leaveOut` are not used.
    bool tree = false;
};

class XPathEvaluator {
public:
    struct Options {
        ModelOptions models;           ///< what the server's context is built from
        std::filesystem::path program; ///< run as `program --xpath-worker` (ncstored)
        std::chrono::milliseconds budget{5000};
        std::size_t workers = 2;
    };

    explicit XPathEvaluator(Options options);
    ~XPathEvaluator(); ///< kills the workers
    XPathEvaluator(const XPathEvaluator&) = delete;
    XPathEvaluator& operator=(const XPathEvaluator&) = delete;

    /// The XML the job selects ("" for nothing). Throws filter::Stopped: resource-denied past
    /// the budget, operation-failed when stopped or when the worker fails; filter::Error for an
    /// expression the worker cannot evaluate.
    std::string evaluate(const XPathJob& job, const StopRequested& stop) const;

    std::chrono::milliseconds budget() const { return options_.budget; }

private:
    struct Worker {
        pid_t pid = -1;
        int fd = -1; ///< the server's end of the socket pair, non-blocking
        bool ready = false;
        ~Worker();
    };
    std::unique_ptr<Worker> acquire(const StopRequested& stop) const;
    void release(std::unique_ptr<Worker> w) const;
    /// Kills and reaps `w`, and starts its replacement.
    void discard(std::unique_ptr<Worker> w) const;
    std::unique_ptr<Worker> spawn() const;

    Options options_;
    std::string hello_; ///< the first message to every worker: the ModelOptions
    mutable std::mutex mutex_;
    mutable std::condition_variable freed_;
    mutable std::vector<std::unique_ptr<Worker>> idle_;
    mutable std::size_t running_ = 0; ///< workers in all, idle or busy
};

/// The worker's side: serves jobs on socket `fd` until it closes. What `ncstored --xpath-worker`
/// runs (fd 3); returns the process's exit code.
int runXPathWorker(int fd);

} // namespace ncstore::netconfd
