// Names the calling thread, so that `top -H`, `ps -L`, perf and gdb tell the server's threads
// apart (the writer, the checkpointer, the publisher, one per connection). Linux keeps at most
// 15 characters; a longer name is cut, never refused.
#pragma once

#include <pthread.h>

#include <string>

namespace ncstore {

inline void nameThisThread(const std::string& name) {
    // A name is a diagnostic aid only: failing to set one changes nothing the server does.
    (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

} // namespace ncstore
