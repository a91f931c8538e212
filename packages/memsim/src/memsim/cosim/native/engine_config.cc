// Reads a native-config file (written by memsim.cosim.native_config) into an EngineConfig.
#include <fstream>

#include "memsim_engine.h"
#include "memsim_layout.h"

namespace memsim {

bool load_config(const std::string& path, EngineConfig& cfg, std::string& error) {
    std::ifstream in(path);
    if (!in) {
        error = "cannot read memsim native config " + path +
                "; write one with `zaya memsim cosim simdram CONFIG -o DIR` (or memsim.cosim.native_config)";
        return false;
    }
    std::string magic;
    long long version = 0;
    in >> magic >> version;
    if (magic != "memsim-native-config" || version != NATIVE_CONFIG_VERSION) {
        error = path + " is not a memsim native config of version " + std::to_string(NATIVE_CONFIG_VERSION) +
                "; write it again with this memsim (zaya memsim cosim simdram CONFIG -o DIR)";
        return false;
    }
    static const char* fields[6] = {"ch", "ra", "bg", "ba", "ro", "co"};
    std::string key;
    while (in >> key) {
        if (key == "name") in >> cfg.name;
        else if (key == "tck_ns") in >> cfg.tck_num >> cfg.tck_den;
        else if (key == "line_bytes") in >> cfg.line_bytes;
        else if (key == "channels") in >> cfg.channels;
        else if (key == "address_bits") in >> cfg.address_bits;
        else if (key == "shift") in >> cfg.shift;
        else if (key == "row_len") in >> cfg.row_len;
        else if (key == "field") {
            std::string f;
            i64 pos, width;
            in >> f >> pos >> width;
            for (int i = 0; i < 6; i++)
                if (f == fields[i]) cfg.field_pos[i] = pos, cfg.field_width[i] = width;
        } else if (key == "K") {
            i64 n;
            in >> n;
            cfg.K.resize(n);
            for (i64 i = 0; i < n; i++) in >> cfg.K[i];
        } else {
            error = path + ": unknown key '" + key + "'; write the config again with this memsim";
            return false;
        }
        if (!in) {
            error = path + ": bad value after '" + key + "'";
            return false;
        }
    }
    if (cfg.K.size() < (size_t)K_HEADER || cfg.row_len <= 0) {
        error = path + ": missing K or row_len";
        return false;
    }
    return true;
}

}  // namespace memsim
