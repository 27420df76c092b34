// cowkit's libdnf5 plugin: after dnf5 resolves, it writes the order in which
// dnf5 adds the transaction's packages to rpm (COWKIT_DNF_ORDER) and the plan
// of the downloads (COWKIT_DNF_PLAN, the JSON that cowkit-dnf's plan.rs reads).
// When cowkit can fetch every package as dnf5 would (the plan's "why" is
// empty), it stops dnf5 before it downloads: dnf5 then exits with status
// COWKIT_STOP_STATUS (79) and prints nothing. Otherwise it writes the reasons
// and lets dnf5 go on (with COWKIT_DNF_PLAN_STRICT set, it fails instead).
// Without COWKIT_DNF_ORDER and COWKIT_DNF_PLAN it does nothing.

#include <libdnf5-cli/exception.hpp>
#include <libdnf5/base/base.hpp>
#include <libdnf5/base/transaction.hpp>
#include <libdnf5/base/transaction_package.hpp>
#include <libdnf5/conf/config_main.hpp>
#include <libdnf5/plugin/iplugin.hpp>
#include <libdnf5/repo/config_repo.hpp>
#include <libdnf5/repo/repo.hpp>
#include <libdnf5/rpm/package.hpp>
#include <libdnf5/rpm/rpm_signature.hpp>
#include <libdnf5/transaction/transaction_item_action.hpp>
#include <rpm/header.h>
#include <rpm/rpmcrypto.h>
#include <rpm/rpmdb.h>
#include <rpm/rpmts.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <string>
#include <vector>

namespace {

using Action = libdnf5::transaction::TransactionItemAction;

constexpr const char * NAME = "cowkit";
constexpr libdnf5::plugin::Version VERSION{1, 0, 0};
// goal_resolved came with plugin API 2.1.
constexpr libdnf5::PluginAPIVersion API{.major = 2, .minor = 1};
constexpr int COWKIT_STOP_STATUS = 79;
constexpr const char * ATTRS[]{"description", nullptr};
constexpr const char * ATTR_VALUES[]{"cowkit: dnf5 resolves, cowkit fetches and installs."};

std::exception_ptr last_exception;

// dnf5 stops here on cowkit's request: its own command line catches
// SilentCommandExitError and exits with the status, printing nothing.
class Stop : public libdnf5::cli::SilentCommandExitError, public libdnf5::plugin::StopRequest {
public:
    Stop() : SilentCommandExitError(COWKIT_STOP_STATUS) {}
};

class Failure : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

std::string json_string(const std::string & s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

// Written beside, then renamed: a reader never sees half a file.
void write_file(const std::string & path, const std::string & text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        f << text;
        f.flush();
        if (!f) {
            throw Failure("cowkit: cannot write " + tmp);
        }
    }
    std::filesystem::rename(tmp, path);
}

// The letter of the order file for how rpm gets the package (see
// libdnf5/rpm/transaction.cpp Transaction::fill): nullptr when not at all.
const char * how(Action a) {
    switch (a) {
        case Action::INSTALL: return "i";
        case Action::UPGRADE:
        case Action::DOWNGRADE: return "u";
        case Action::REINSTALL: return "r";
        case Action::REMOVE:
        case Action::REPLACED: return "e";
        default: return nullptr;
    }
}

bool inbound(Action a) {
    return a == Action::INSTALL || a == Action::UPGRADE || a == Action::DOWNGRADE || a == Action::REINSTALL;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
}

// The sha256 (lower-case hex) and size of the file at `path`.
std::pair<std::string, unsigned long long> file_sha256(const std::string & path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        throw Failure("cowkit: cannot open " + path);
    }
    DIGEST_CTX ctx = rpmDigestInit(RPM_HASH_SHA256, RPMDIGEST_NONE);
    std::vector<char> buf(1 << 16);
    unsigned long long size = 0;
    while (f) {
        f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto n = static_cast<size_t>(f.gcount());
        rpmDigestUpdate(ctx, buf.data(), n);
        size += n;
    }
    const bool bad = f.bad();
    void * hex = nullptr;
    rpmDigestFinal(ctx, &hex, nullptr, 1);
    std::string out(static_cast<const char *>(hex));
    std::free(hex);
    if (bad) {
        throw Failure("cowkit: cannot read " + path);
    }
    return {lower(out), size};
}

// The versions of the gpg-pubkey entries in the installroot's rpm database
// (each is a key's short id).
std::set<std::string> root_keys(const std::string & root) {
    std::set<std::string> keys;
    rpmts ts = rpmtsCreate();
    rpmtsSetRootDir(ts, root.c_str());
    rpmdbMatchIterator mi = rpmtsInitIterator(ts, RPMDBI_NAME, "gpg-pubkey", 0);
    while (Header h = rpmdbNextIterator(mi)) {
        if (const char * v = headerGetString(h, RPMTAG_VERSION)) {
            keys.insert(lower(v));
        }
    }
    rpmdbFreeIterator(mi);
    rpmtsFree(ts);
    return keys;
}

class Cowkit final : public libdnf5::plugin::IPlugin2_1 {
public:
    Cowkit(libdnf5::plugin::IPluginData & data, libdnf5::ConfigParser &) : IPlugin2_1(data) {}

    libdnf5::PluginAPIVersion get_api_version() const noexcept override { return API; }
    const char * get_name() const noexcept override { return NAME; }
    libdnf5::plugin::Version get_version() const noexcept override { return VERSION; }
    const char * const * get_attributes() const noexcept override { return ATTRS; }
    const char * get_attribute(const char * name) const noexcept override {
        for (size_t i = 0; ATTRS[i]; ++i) {
            if (std::strcmp(name, ATTRS[i]) == 0) {
                return ATTR_VALUES[i];
            }
        }
        return nullptr;
    }

    void goal_resolved(const libdnf5::base::Transaction & transaction) override {
        // dnf5 itself reports a transaction it could not resolve, and fails.
        // (get_problems only reads, but is not declared const.)
        if (const_cast<libdnf5::base::Transaction &>(transaction).get_problems() != libdnf5::GoalProblem::NO_PROBLEM) {
            return;
        }
        auto items = transaction.get_transaction_packages();
        // As rpm::Transaction::fill does, for reproducible builds.
        if (std::getenv("SOURCE_DATE_EPOCH") != nullptr) {
            std::sort(items.begin(), items.end(), [](const auto & a, const auto & b) {
                return a.get_package().get_nevra() < b.get_package().get_nevra();
            });
        }
        if (const char * order = std::getenv("COWKIT_DNF_ORDER")) {
            std::string text;
            for (const auto & item : items) {
                if (const char * h = how(item.get_action())) {
                    text += std::string(h) + "\t" + item.get_package().get_nevra() + "\n";
                }
            }
            write_file(order, text);
        }
        const char * plan = std::getenv("COWKIT_DNF_PLAN");
        if (!plan) {
            return;
        }
        std::vector<std::string> why;
        const std::string text = plan_json(items, why);
        write_file(plan, text);
        if (why.empty()) {
            throw Stop();
        }
        if (std::getenv("COWKIT_DNF_PLAN_STRICT")) {
            std::string all;
            for (const auto & w : why) {
                all += (all.empty() ? "" : "; ") + w;
            }
            throw Failure("cowkit cannot fetch these packages itself: " + all);
        }
    }

private:
    std::string plan_json(const std::vector<libdnf5::base::TransactionPackage> & items, std::vector<std::string> & why) {
        auto & base = get_base();
        auto & main = base.get_config();
        std::set<std::string> reasons;
        std::ostringstream pkgs;
        std::map<std::string, std::string> repos;
        std::map<std::string, libdnf5::repo::Repo *> checked;
        size_t most_urls = 1;
        bool first = true;
        for (const auto & item : items) {
            if (!inbound(item.get_action())) {
                continue;
            }
            const auto & p = item.get_package();
            const std::string nevra = p.get_nevra();
            auto repo = p.get_repo();
            const bool cmdline = repo->get_type() == libdnf5::repo::Repo::Type::COMMANDLINE;
            const std::string rid = repo->get_id();
            auto sum = p.get_checksum();
            std::string ctype = sum.get_type_str();
            std::string hex = sum.get_checksum();
            unsigned long long size = p.get_download_size();
            std::vector<std::string> urls;
            std::string local;
            if (cmdline) {
                if (main.get_localpkg_gpgcheck_option().get_value()) {
                    reasons.insert(nevra + ": a local package with localpkg_gpgcheck");
                }
                local = std::filesystem::absolute(p.get_package_path()).string();
                // libdnf5 keeps no checksum of a command-line package: the
                // file's, now, so that cowkit reads what dnf5 resolved.
                ctype = "sha256";
                std::tie(hex, size) = file_sha256(local);
                repos[rid] = "{\"gpgcheck\": false, \"keys\": [], \"timeout\": 30, \"minrate\": 1000}";
            } else {
                if (ctype != "sha256" && ctype != "sha512") {
                    reasons.insert(nevra + ": its checksum is " + ctype + " (cowkit checks sha256 and sha512)");
                }
                auto & rc = repo->get_config();
                for (auto [opt, value] : std::vector<std::pair<const char *, std::string>>{
                         {"proxy", rc.get_proxy_option().get_value()},
                         {"sslclientcert", rc.get_sslclientcert_option().get_value()},
                         {"sslclientkey", rc.get_sslclientkey_option().get_value()},
                         {"username", rc.get_username_option().get_value()},
                         {"sslcacert", rc.get_sslcacert_option().get_value()}}) {
                    if (!value.empty() && value != "_none_") {
                        reasons.insert("repository " + rid + ": " + opt + " is set");
                    }
                }
                if (!rc.get_sslverify_option().get_value()) {
                    reasons.insert("repository " + rid + ": sslverify is off");
                }
                if (rc.get_throttle_option().get_value() != 0 || rc.get_bandwidth_option().get_value() != 0) {
                    reasons.insert("repository " + rid + ": throttle/bandwidth is set");
                }
                const bool gpgcheck = rc.get_pkg_gpgcheck_option().get_value();
                std::vector<std::string> keys;
                if (gpgcheck) {
                    checked[rid] = &*repo;
                    const auto & gpgkeys = rc.get_gpgkey_option().get_value();
                    if (gpgkeys.empty()) {
                        reasons.insert("repository " + rid + ": pkg_gpgcheck with no gpgkey");
                    }
                    for (const auto & k : gpgkeys) {
                        if (k.rfind("file://", 0) != 0) {
                            reasons.insert("repository " + rid + ": gpgkey " + k + " is not a file:// URL");
                        } else if (k.find('%') != std::string::npos || !std::filesystem::is_regular_file(k.substr(7))) {
                            reasons.insert("repository " + rid + ": gpgkey " + k + " is not a file:///PATH of a file");
                        }
                    }
                }
                for (const auto & k : rc.get_gpgkey_option().get_value()) {
                    keys.push_back(k.rfind("file://", 0) == 0 ? k.substr(7) : k);
                }
                if (p.is_available_locally()) {
                    local = p.get_package_path();
                } else {
                    urls = p.get_remote_locations();
                    // The mirrors librepo reported when dnf5 loaded the
                    // metadata (a baseurl repository's baseurls, else its
                    // metalink's or mirrorlist's mirrors), as dnf5 itself
                    // lists them; dnf5 downloads from the baseurls, or asks
                    // the metalink/mirrorlist again. None: why.
                    if (urls.empty()) {
                        reasons.insert(nevra + ": no URL to fetch it from");
                    }
                    for (const auto & u : urls) {
                        const auto scheme = u.substr(0, u.find("://"));
                        if (scheme != "http" && scheme != "https" && scheme != "file") {
                            reasons.insert(nevra + ": URL " + u + " (cowkit fetches http, https and file)");
                        }
                    }
                    most_urls = std::max(most_urls, urls.size());
                }
                std::string keys_json;
                for (const auto & k : keys) {
                    keys_json += (keys_json.empty() ? "" : ", ") + json_string(k);
                }
                repos[rid] = "{\"gpgcheck\": " + std::string(gpgcheck ? "true" : "false") + ", \"keys\": [" +
                             keys_json + "], \"timeout\": " + std::to_string(rc.get_timeout_option().get_value()) +
                             ", \"minrate\": " + std::to_string(rc.get_minrate_option().get_value()) + "}";
            }
            std::string urls_json;
            for (const auto & u : urls) {
                urls_json += (urls_json.empty() ? "" : ", ") + json_string(u);
            }
            const std::string epoch = p.get_epoch();
            pkgs << (first ? "" : ", ") << "{\"nevra\": " << json_string(nevra)
                 << ", \"name\": " << json_string(p.get_name()) << ", \"epoch\": " << (epoch.empty() ? "0" : epoch)
                 << ", \"version\": " << json_string(p.get_version())
                 << ", \"release\": " << json_string(p.get_release()) << ", \"arch\": " << json_string(p.get_arch())
                 << ", \"size\": " << size << ", \"checksum\": [" << json_string(ctype) << ", "
                 << json_string(lower(hex)) << "], \"repo\": " << json_string(rid)
                 << ", \"urls\": [" << urls_json << "], \"local\": " << (local.empty() ? "null" : json_string(local))
                 << "}";
            first = false;
        }
        if (!checked.empty()) {
            if (main.get_gpgkey_dns_verification_option().get_value()) {
                reasons.insert("gpgkey_dns_verification is set (cowkit does not ask DNSSEC about keys)");
            }
            foreign_keys(checked, reasons);
        }
        why.assign(reasons.begin(), reasons.end());
        std::string why_json;
        for (const auto & w : why) {
            why_json += (why_json.empty() ? "" : ", ") + json_string(w);
        }
        std::string repos_json;
        for (const auto & [id, r] : repos) {
            repos_json += (repos_json.empty() ? "" : ", ") + json_string(id) + ": " + r;
        }
        // dnf5's `retries` does nothing (config_main.hpp marks it so): librepo
        // tries each mirror of a package once, so the most failures allowed
        // are the most mirrors one package has, less the one that succeeds.
        const auto max_parallel = main.get_max_parallel_downloads_option().get_value();
        // The transaction flags and keepcache as dnf5 holds them: its
        // configuration files and command line together (the command line's
        // tsflags appended), for cowkit to honour or refuse by name.
        std::string tsflags_json;
        for (const auto & f : main.get_tsflags_option().get_value()) {
            tsflags_json += (tsflags_json.empty() ? "" : ", ") + json_string(f);
        }
        return "{\"why\": [" + why_json + "], \"packages\": [" + pkgs.str() + "], \"repos\": {" + repos_json +
               "}, \"max_parallel_downloads\": " + std::to_string(max_parallel) +
               ", \"retries\": " + std::to_string(most_urls > 1 ? most_urls - 1 : 1) + ", \"tsflags\": [" +
               tsflags_json + "], \"keepcache\": " + (main.get_keepcache_option().get_value() ? "true" : "false") +
               "}\n";
    }

    // dnf5 also accepts packages signed by the keys the root's database
    // holds; cowkit checks against the repository's key files only: why
    // not, where the database holds others.
    void foreign_keys(const std::map<std::string, libdnf5::repo::Repo *> & checked, std::set<std::string> & reasons) {
        auto & base = get_base();
        const auto have = root_keys(base.get_config().get_installroot_option().get_value());
        if (have.empty()) {
            return;
        }
        libdnf5::rpm::RpmSignature sig(base);
        for (const auto & [rid, repo] : checked) {
            std::set<std::string> listed;
            bool readable = true;
            for (const auto & k : repo->get_config().get_gpgkey_option().get_value()) {
                if (k.rfind("file://", 0) != 0 || k.find('%') != std::string::npos) {
                    readable = false;  // refused above already
                    break;
                }
                try {
                    for (const auto & info : sig.parse_key_file(k)) {
                        listed.insert(lower(info.get_short_key_id()));
                    }
                } catch (const std::exception & e) {
                    reasons.insert("repository " + rid + ": cannot read gpgkey " + k + ": " + e.what());
                    readable = false;
                }
            }
            if (!readable) {
                continue;
            }
            std::string extra;
            for (const auto & k : have) {
                if (!listed.count(k)) {
                    extra += (extra.empty() ? "" : ", ") + k;
                }
            }
            if (!extra.empty()) {
                reasons.insert(
                    "repository " + rid + ": the root's rpm database holds key(s) " + extra +
                    ", which its gpgkey does not (dnf5 accepts packages signed by them; cowkit checks against the "
                    "repository's keys only)");
            }
        }
    }
};

}  // namespace

extern "C" {

libdnf5::PluginAPIVersion libdnf_plugin_get_api_version(void) {
    return API;
}

const char * libdnf_plugin_get_name(void) {
    return NAME;
}

libdnf5::plugin::Version libdnf_plugin_get_version(void) {
    return VERSION;
}

libdnf5::plugin::IPlugin * libdnf_plugin_new_instance(
    [[maybe_unused]] libdnf5::LibraryVersion library_version,
    libdnf5::plugin::IPluginData & data,
    libdnf5::ConfigParser & parser) try {
    return new Cowkit(data, parser);
} catch (...) {
    last_exception = std::current_exception();
    return nullptr;
}

void libdnf_plugin_delete_instance(libdnf5::plugin::IPlugin * plugin_object) {
    delete plugin_object;
}

std::exception_ptr * libdnf_plugin_get_last_exception(void) {
    return &last_exception;
}
}
