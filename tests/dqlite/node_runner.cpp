// ncstore-dqlite-node: runs one embedded dqlite node (ncstore::dqlite::Node) in a process of its
// own, so that a test can kill it with SIGKILL the way a machine dies. Prints "ready" once the node
// serves; stops cleanly when its standard input closes (the test went away).
//   ncstore-dqlite-node ID HOST:PORT DATA_DIR LATENCY_MS
#include "ncstore/dqlite/node.hpp"

#include <cstdio>
#include <iostream>
#include <string>

#include <unistd.h>

int main(int argc, char** argv) {
    if (argc != 5) {
        std::cerr << "usage: " << argv[0] << " ID HOST:PORT DATA_DIR LATENCY_MS\n";
        return 2;
    }
    try {
        ncstore::dqlite::Node node({.id = std::stoull(argv[1]),
                                    .address = argv[2],
                                    .dataDir = argv[3],
                                    .networkLatency = std::chrono::milliseconds(std::stoul(argv[4]))});
        node.start();
        std::cout << "ready" << std::endl;
        char byte;
        while (::read(STDIN_FILENO, &byte, 1) > 0) {
        }
        node.stop();
    } catch (const std::exception& e) {
        std::cerr << "ncstore-dqlite-node: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
