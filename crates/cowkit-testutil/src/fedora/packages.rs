//! The specs of [`super`]'s repository (see its table).

use std::path::Path;

use super::{elf, man, put, put_bytes, Pkg, KRB5_LANGS, LOG, LUA_LDCONFIG};
use crate::repo::Build;

/// The busybox applets `coreutils-single` links in `/usr/bin` (`sh` is
/// `bash`'s).
const APPLETS: [&str; 35] = [
    "cat", "echo", "printf", "mkdir", "rmdir", "grep", "sed", "ls", "cp", "mv", "rm", "ln", "id",
    "touch", "test", "[", "true", "false", "head", "tail", "wc", "sort", "stat", "readlink",
    "chmod", "chown", "env", "sleep", "cut", "tr", "uname", "awk", "basename", "xargs", "gzip",
];

/// Every package: v1 then v2.
pub(super) fn all(busybox: &Path) -> Vec<Pkg> {
    let mut v = vec![
        setup(),
        filesystem(),
        coreutils(busybox),
        bash(),
        glibc(),
        glibc_common(),
    ];
    v.extend([zlib("1.2.13", false), zlib("1.3.1", true)]);
    v.extend([systemd("255", false), systemd("256", true)]);
    v.extend([httpd("1.3.42", false), httpd("2.4.58", true)]);
    v.extend([mod_legacy(), mandoc(), shared_mime_info()]);
    v.extend([procps(), procps_ng()]);
    v.extend([kernel("6.1.0", false), kernel("6.2.0", true)]);
    for arch in MULTILIB {
        v.extend([
            cyrus_sasl_lib("2.1.28", false, arch),
            cyrus_sasl_lib("2.1.29", true, arch),
        ]);
        v.extend([
            krb5_libs("1.21.2", false, arch),
            krb5_libs("1.21.3", true, arch),
        ]);
    }
    v.extend([dejavu_fonts("2.37", false), dejavu_fonts("2.38", true)]);
    v
}

/// The architectures of the multilib pairs (`x86_64` first: the
/// preferred colour).
pub(super) const MULTILIB: [&str; 2] = ["x86_64", "i686"];

/// `%{_libdir}` and the ELF class (`__isa_bits`) of `arch`.
fn libdir_bits(arch: &str) -> (&'static str, u8) {
    if arch == "i686" {
        ("/usr/lib", 32)
    } else {
        ("/usr/lib64", 64)
    }
}

/// `%install` lines writing the script `body` (no `EOF` line) to `path`,
/// mode 0755.
fn script(path: &str, body: &str) -> String {
    let dir = &path[..path.rfind('/').unwrap()];
    format!(
        "mkdir -p \"$B{dir}\"\ncat > \"$B{path}\" <<'EOF'\n#!/bin/sh\n{body}\nEOF\nchmod 0755 \"$B{path}\""
    )
}

fn setup() -> Pkg {
    Pkg::new("setup", "2.14.5", false)
        .install(&put(
            "/etc/passwd",
            "0644",
            "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:Kernel Overflow User:/:/sbin/nologin",
        ))
        .install(&put("/etc/group", "0644", "root:x:0:\nnobody:x:65534:"))
        .install(&put("/etc/shells", "0644", "/bin/sh"))
        .install(&put("/etc/hosts", "0644", "127.0.0.1   localhost"))
        .files(
            "%verify(not md5 size mtime) %config(noreplace) /etc/passwd\n\
             %verify(not md5 size mtime) %config(noreplace) /etc/group\n\
             %config(noreplace) /etc/shells\n\
             %config(noreplace) /etc/hosts",
        )
        .lua(
            "%post -p <lua>",
            "post",
            "for i, name in ipairs({\"passwd\", \"shadow\", \"group\", \"gshadow\"}) do\n\
               os.remove(\"/etc/\" .. name .. \".rpmnew\")\n\
             end\n\
             if posix.access(\"/usr/bin/newaliases\", \"x\") then\n\
               local pid = posix.fork()\n\
               if pid == 0 then\n\
                 posix.redirect2null(1)\n\
                 posix.exec(\"/usr/bin/newaliases\")\n\
               elseif pid > 0 then\n\
                 posix.wait(pid)\n\
               end\n\
             end",
        )
}

fn filesystem() -> Pkg {
    let dirs = [
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/proc",
        "/root",
        "/run",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/sbin",
        "/usr/lib",
        "/usr/lib64",
        "/usr/lib/modules",
        "/usr/share",
        "/usr/share/man",
        "/usr/share/man/man1",
        "/usr/share/man/man8",
        "/usr/share/mime",
        "/usr/share/mime/packages",
        "/var",
        "/var/lib",
        "/var/log",
        "/var/tmp",
        "/var/cache",
    ];
    let mk: String = dirs
        .iter()
        .map(|d| format!("mkdir -p \"$B{d}\"\n"))
        .collect();
    let listed: String = dirs
        .iter()
        .map(|d| match *d {
            "/root" => "%dir %attr(0550,root,root) /root\n".to_string(),
            "/boot" => "%attr(555,root,root) /boot\n".to_string(),
            "/tmp" | "/var/tmp" => format!("%dir %attr(1777,root,root) {d}\n"),
            "/proc" | "/sys" => format!("%dir %attr(0555,root,root) {d}\n"),
            _ => format!("%dir {d}\n"),
        })
        .collect();
    Pkg::new("filesystem", "3.18", false)
        .pre("Requires(pre): setup")
        .install(&mk)
        .install(
            "ln -s usr/bin \"$B/bin\"\nln -s usr/sbin \"$B/sbin\"\n\
             ln -s usr/lib \"$B/lib\"\nln -s usr/lib64 \"$B/lib64\"",
        )
        .files(&format!(
            "%dir %attr(555,root,root) /\n{listed}/bin\n/sbin\n/lib\n/lib64"
        ))
        .lua_then_log(
            "%pretrans -p <lua>",
            "pretrans",
            "posix.mkdir(\"/usr\")\n\
             posix.mkdir(\"/usr/bin\")\n\
             posix.mkdir(\"/usr/sbin\")\n\
             posix.mkdir(\"/usr/lib\")\n\
             posix.mkdir(\"/usr/lib64\")\n\
             posix.symlink(\"usr/bin\", \"/bin\")\n\
             posix.symlink(\"usr/sbin\", \"/sbin\")\n\
             posix.symlink(\"usr/lib\", \"/lib\")\n\
             posix.symlink(\"usr/lib64\", \"/lib64\")\n\
             posix.mkdir(\"/run\")\n\
             posix.mkdir(\"/var\")\n\
             posix.mkdir(\"/var/log\")",
        )
        .lua(
            "%posttrans -p <lua>",
            "posttrans",
            "if posix.access(\"/usr/sbin/restorecon\", \"x\") then\n\
               rpm.execute(\"/usr/sbin/restorecon\", \"/var\", \"/run\", \"/boot\", \"/dev\")\n\
             end",
        )
}

fn coreutils(busybox: &Path) -> Pkg {
    let links: String = APPLETS
        .iter()
        .map(|a| format!("ln -s busybox \"$B/usr/bin/{a}\"\n"))
        .collect();
    let linked: String = APPLETS.iter().map(|a| format!("/usr/bin/{a}\n")).collect();
    Pkg::new("coreutils-single", "9.4", false)
        .pre("Requires: filesystem\nProvides: coreutils = 9.4")
        .install(&format!(
            "mkdir -p \"$B/usr/bin\"\ncp {} \"$B/usr/bin/busybox\"\n\
             chmod 0755 \"$B/usr/bin/busybox\"\n{links}",
            busybox.display()
        ))
        .files(&format!("/usr/bin/busybox\n{linked}"))
}

fn bash() -> Pkg {
    Pkg::new("bash", "5.2.26", false)
        .pre("Requires: filesystem coreutils-single\nProvides: /bin/sh\nProvides: /bin/bash")
        .install("mkdir -p \"$B/usr/bin\"\nln -s busybox \"$B/usr/bin/sh\"")
        .install(&script("/usr/bin/bash", "exec /usr/bin/busybox sh \"$@\""))
        .install(&man("/usr/share/man/man1/bash.1.gz", ".TH BASH 1"))
        .files("/usr/bin/sh\n/usr/bin/bash\n/usr/share/man/man1/bash.1.gz")
        .lua(
            "%post -p <lua>",
            "post",
            "local nl = '\\n'\n\
             local sh = '/bin/sh' .. nl\n\
             local bash = '/bin/bash' .. nl\n\
             local f = io.open('/etc/shells', 'a+')\n\
             if f then\n\
               local shells = nl .. f:read('*all') .. nl\n\
               if not shells:find(nl .. sh) then f:write(sh) end\n\
               if not shells:find(nl .. bash) then f:write(bash) end\n\
               f:close()\n\
             end",
        )
        .lua(
            "%postun -p <lua>",
            "postun",
            "if arg[2] == 0 then\n\
               local t = {}\n\
               for line in io.lines('/etc/shells') do\n\
                 if line ~= '/bin/bash' and line ~= '/bin/sh' then table.insert(t, line) end\n\
               end\n\
               local f = io.open('/etc/shells', 'w+')\n\
               for _, line in ipairs(t) do f:write(line .. '\\n') end\n\
               f:close()\n\
             end",
        )
}

fn glibc() -> Pkg {
    Pkg::new("glibc", "2.39", false)
        .pre(
            "Requires: filesystem\nRequires(post): /bin/sh coreutils-single\n\
             Provides: ldconfig\nProvides: /sbin/ldconfig",
        )
        .install(&put("/usr/lib64/libc.so.6", "0755", "libc 2.39"))
        .install(&put(
            "/usr/lib64/ld-linux-x86-64.so.2",
            "0755",
            "ld.so 2.39",
        ))
        .install(&put(
            "/etc/ld.so.conf",
            "0644",
            "include ld.so.conf.d/*.conf",
        ))
        .install("mkdir -p \"$B/etc/ld.so.conf.d\"\ntouch \"$B/etc/ld.so.cache\"")
        .install(&script(
            "/usr/sbin/ldconfig",
            &format!(
                "echo \"ldconfig [$*]\" >> {LOG}\n\
                 ls /usr/lib64/*.so* 2>/dev/null | sort > /etc/ld.so.cache"
            ),
        ))
        .files(
            "/usr/lib64/libc.so.6\n/usr/lib64/ld-linux-x86-64.so.2\n/usr/sbin/ldconfig\n\
             %config(noreplace) /etc/ld.so.conf\n%dir /etc/ld.so.conf.d\n\
             %ghost %attr(0644,root,root) %config(missingok,noreplace) /etc/ld.so.cache",
        )
        .lua(
            "%pre -p <lua>",
            "pre",
            "local required = '3.2'\n\
             local rel = posix.uname('%%r')\n\
             if rpm.vercmp(rel, required) < 0 then\n\
               error('FATAL: kernel too old', 0)\n\
             end",
        )
        .lua(
            "%post -p <lua>",
            "post",
            &format!(
                "local ldsoconf = '/etc/ld.so.conf'\n\
                 if posix.access(ldsoconf) then\n\
                   local have_include = false\n\
                   for line in io.lines(ldsoconf) do\n\
                     if line == 'include ld.so.conf.d/*.conf' then have_include = true end\n\
                   end\n\
                   if not have_include then\n\
                     local f = assert(io.open(ldsoconf, 'a'))\n\
                     f:write('include ld.so.conf.d/*.conf\\n')\n\
                     f:close()\n\
                   end\n\
                 end\n{LUA_LDCONFIG}"
            ),
        )
}

fn glibc_common() -> Pkg {
    let prefixes = "/lib /usr/lib /lib64 /usr/lib64";
    Pkg::new("glibc-common", "2.39", false)
        .pre("Requires: glibc")
        .install(&script("/usr/bin/locale", "echo LANG=C.UTF-8"))
        .install(&man("/usr/share/man/man1/locale.1.gz", ".TH LOCALE 1"))
        .files("/usr/bin/locale\n/usr/share/man/man1/locale.1.gz")
        .lua_files(
            &format!("%transfiletriggerin -P 2000000 -p <lua> -- {prefixes}"),
            "transfiletriggerin(2000000)",
            LUA_LDCONFIG,
        )
        .lua_files(
            &format!("%transfiletriggerpostun -P 2000000 -p <lua> -- {prefixes}"),
            "transfiletriggerpostun(2000000)",
            LUA_LDCONFIG,
        )
}

fn zlib(version: &'static str, v2: bool) -> Pkg {
    Pkg::new("zlib", version, v2)
        .pre("Requires: glibc")
        .install(&put(
            &format!("/usr/lib64/libz.so.{version}"),
            "0755",
            &format!("zlib {version}"),
        ))
        .install(&format!(
            "ln -s libz.so.{version} \"$B/usr/lib64/libz.so.1\""
        ))
        .files(&format!(
            "/usr/lib64/libz.so.{version}\n/usr/lib64/libz.so.1"
        ))
        .raw("%post -p /sbin/ldconfig")
        .raw("%postun -p /sbin/ldconfig")
}

fn systemd(version: &'static str, v2: bool) -> Pkg {
    let units = "/usr/lib/systemd/system /etc/systemd/system";
    Pkg::new("systemd", version, v2)
        .pre("Requires: bash coreutils-single glibc\nRequires(post): /bin/sh")
        .install(&put(
            "/usr/lib/systemd/system/systemd-journald.service",
            "0644",
            &format!("[Unit]\nDescription=Journal Service {version}"),
        ))
        .install(&put(
            "/usr/lib/tmpfiles.d/systemd.conf",
            "0644",
            "d /run/systemd 0755 root root\nd /var/lib/systemd 0755 root root",
        ))
        .install(&put(
            "/usr/lib/sysusers.d/systemd.conf",
            "0644",
            "g systemd-journal 190",
        ))
        .install("mkdir -p \"$B/etc/systemd/system\"")
        .install(&script("/usr/bin/systemctl", &systemctl()))
        .install(&script(
            "/usr/lib/systemd/systemd-update-helper",
            &update_helper(),
        ))
        .install(&script("/usr/bin/kernel-install", &kernel_install()))
        .install(&man("/usr/share/man/man1/systemctl.1.gz", ".TH SYSTEMCTL 1"))
        .files(
            "%dir /usr/lib/systemd\n%dir /usr/lib/systemd/system\n\
             /usr/lib/systemd/system/systemd-journald.service\n\
             /usr/lib/systemd/systemd-update-helper\n\
             %dir /usr/lib/tmpfiles.d\n/usr/lib/tmpfiles.d/systemd.conf\n\
             %dir /usr/lib/sysusers.d\n/usr/lib/sysusers.d/systemd.conf\n\
             %dir /etc/systemd\n%dir /etc/systemd/system\n\
             /usr/bin/systemctl\n/usr/bin/kernel-install\n\
             /usr/share/man/man1/systemctl.1.gz",
        )
        .sh("%post", "post", "[ -e /etc/machine-id ] || echo uninitialized > /etc/machine-id")
        .lua(
            "%posttrans -p <lua>",
            "posttrans",
            &format!(
                "local e = rpm.expand('%%{{_prefix}} %%{{_libdir}} %%{{_sysconfdir}} %%{{_dbpath}}')\n\
                 local l = assert(io.open('{LOG}', 'a'))\n\
                 l:write('systemd-{version} rpm.expand: ' .. e .. '\\n')\n\
                 l:close()"
            ),
        )
        .sh(
            "%triggerun -- systemd < 256",
            "triggerun(systemd<256)",
            "systemctl daemon-reexec || :",
        )
        .sh_files(
            "%filetriggerin -P 1000700 -- /usr/lib/systemd/system",
            "filetriggerin(1000700)",
            "",
        )
        .sh_files(
            "%filetriggerun -P 1000700 -- /usr/lib/systemd/system",
            "filetriggerun(1000700)",
            "",
        )
        .sh_files(
            "%filetriggerin -P 9000 -- /usr/lib/tmpfiles.d",
            "filetriggerin(9000)",
            TMPFILES,
        )
        .sh_files(
            &format!("%transfiletriggerin -P 900900 -- {units}"),
            "transfiletriggerin(900900)",
            "systemctl daemon-reload || :",
        )
        .sh_files(
            &format!("%transfiletriggerpostun -P 1000100 -- {units}"),
            "transfiletriggerpostun(1000100)",
            "systemctl daemon-reload || :",
        )
        .sh_files(
            &format!("%transfiletriggerpostun -P 10000 -- {units}"),
            "transfiletriggerpostun(10000)",
            "/usr/lib/systemd/systemd-update-helper system-restart || :",
        )
        .sh_files(
            "%transfiletriggerin -P 100700 -- /usr/lib/sysusers.d",
            "transfiletriggerin(100700)",
            "",
        )
}

/// The `%filetriggerin -- /usr/lib/tmpfiles.d` body: the `d` lines of
/// every file given (in `$files`) made, as `systemd-tmpfiles --create`.
const TMPFILES: &str = "for f in $files; do\n\
     while read -r t p m u g rest; do\n\
       [ \"$t\" = d ] || continue\n\
       mkdir -p \"$p\"\n\
       chmod \"$m\" \"$p\"\n\
       uid=$(grep \"^$u:\" /etc/passwd | cut -d: -f3)\n\
       gid=$(grep \"^$g:\" /etc/group | cut -d: -f3)\n\
       chown \"$uid:$gid\" \"$p\"\n\
     done < \"$f\"\n\
   done";

fn systemctl() -> String {
    format!(
        "echo \"systemctl [$*]\" >> {LOG}\n\
         [ \"$1\" = --no-reload ] && shift\n\
         cmd=$1\n\
         shift\n\
         w=/etc/systemd/system/multi-user.target.wants\n\
         case \"$cmd\" in\n\
         preset)\n\
           mkdir -p $w\n\
           for u in \"$@\"; do\n\
             case \"$u\" in *.service) ln -sf /usr/lib/systemd/system/$u $w/$u ;; esac\n\
           done ;;\n\
         disable)\n\
           for u in \"$@\"; do rm -f $w/$u; done ;;\n\
         esac\n\
         exit 0"
    )
}

fn update_helper() -> String {
    format!(
        "echo \"systemd-update-helper [$*]\" >> {LOG}\n\
         cmd=$1\n\
         shift\n\
         case \"$cmd\" in\n\
         install-system-units) /usr/bin/systemctl --no-reload preset \"$@\" ;;\n\
         remove-system-units) /usr/bin/systemctl --no-reload disable \"$@\" ;;\n\
         mark-restart-system-units)\n\
           mkdir -p /run/systemd/rpm\n\
           for u in \"$@\"; do touch \"/run/systemd/rpm/$u-restart\"; done ;;\n\
         esac\n\
         exit 0"
    )
}

fn kernel_install() -> String {
    format!(
        "echo \"kernel-install [$*]\" >> {LOG}\n\
         case \"$1\" in\n\
         add)\n\
           mkdir -p /boot/loader/entries\n\
           cp \"$3\" \"/boot/vmlinuz-$2\"\n\
           echo \"title Fedora Linux ($2)\" > \"/boot/loader/entries/$2.conf\"\n\
           echo \"linux /vmlinuz-$2\" >> \"/boot/loader/entries/$2.conf\" ;;\n\
         remove)\n\
           rm -f \"/boot/vmlinuz-$2\" \"/boot/loader/entries/$2.conf\" ;;\n\
         esac"
    )
}

fn httpd(version: &'static str, v2: bool) -> Pkg {
    let helper = "/usr/lib/systemd/systemd-update-helper";
    let units = "httpd.service htcacheclean.service httpd.socket";
    let mut p = Pkg::new("httpd", version, v2)
        .pre("Requires: systemd setup\nRequires(pre): /bin/sh coreutils-single setup")
        .install(&put(
            "/etc/httpd/conf/httpd.conf",
            "0644",
            &format!("ServerRoot /etc/httpd\n# httpd {version}"),
        ))
        .install(&script("/usr/sbin/httpd", &format!("echo httpd {version}")))
        .install(&put(
            "/usr/lib/systemd/system/httpd.service",
            "0644",
            &format!("[Unit]\nDescription=The Apache HTTP Server {version}"),
        ))
        .install(&put(
            "/usr/lib/tmpfiles.d/httpd.conf",
            "0644",
            "d /run/httpd 710 root apache\nd /run/httpd/htcacheclean 700 apache apache",
        ))
        .install(&put(
            "/usr/share/mime/packages/httpd.xml",
            "0644",
            &format!("<mime-info>httpd {version}</mime-info>"),
        ))
        .install(&put(
            "/usr/lib64/httpd/modules/mod_core.so",
            "0755",
            &format!("core {version}"),
        ))
        .install(&man("/usr/share/man/man8/httpd.8.gz", ".TH HTTPD 8"))
        .install("mkdir -p \"$B/run/httpd\" \"$B/var/lib/dav\"")
        .files(
            "%dir /etc/httpd\n%dir /etc/httpd/conf\n\
             %config(noreplace) /etc/httpd/conf/httpd.conf\n/usr/sbin/httpd\n\
             /usr/lib/systemd/system/httpd.service\n/usr/lib/tmpfiles.d/httpd.conf\n\
             /usr/share/mime/packages/httpd.xml\n%dir /usr/lib64/httpd\n\
             %dir /usr/lib64/httpd/modules\n/usr/lib64/httpd/modules/mod_core.so\n\
             /usr/share/man/man8/httpd.8.gz\n\
             %attr(0710,root,apache) %dir /run/httpd\n\
             %attr(0700,apache,apache) %dir /var/lib/dav",
        );
    if v2 {
        p = p
            .install(&put(
                "/usr/lib64/httpd/modules/mod_ssl.so",
                "0755",
                "ssl 2.4",
            ))
            .files("/usr/lib64/httpd/modules/mod_ssl.so");
    }
    p.sh(
        "%pre",
        "pre",
        "grep -q '^apache:' /etc/group || echo 'apache:x:48:' >> /etc/group\n\
         grep -q '^apache:' /etc/passwd || \
         echo 'apache:x:48:48:Apache:/usr/share/httpd:/sbin/nologin' >> /etc/passwd",
    )
    .sh(
        "%post",
        "post",
        &format!(
            "if [ $1 -eq 1 ] && [ -x \"{helper}\" ]; then\n\
               {helper} install-system-units {units} || :\n\
             fi"
        ),
    )
    .sh(
        "%preun",
        "preun",
        &format!(
            "if [ $1 -eq 0 ] && [ -x \"{helper}\" ]; then\n\
               {helper} remove-system-units {units} || :\n\
             fi"
        ),
    )
    .sh(
        "%postun",
        "postun",
        &format!(
            "if [ $1 -ge 1 ] && [ -x \"{helper}\" ]; then\n\
               {helper} mark-restart-system-units httpd.service || :\n\
             fi"
        ),
    )
    .sh(
        "%posttrans",
        "posttrans",
        "test -f /etc/sysconfig/httpd-disable-posttrans || \
         /bin/systemctl try-restart --no-block httpd.service htcacheclean.service >/dev/null 2>&1 || :",
    )
}

fn mod_legacy() -> Pkg {
    let cond = "httpd < 2.0";
    Pkg::new("mod_legacy", "1.0", false)
        .pre("Requires: httpd")
        .install(&put(
            "/usr/lib64/httpd/modules/mod_legacy.so",
            "0755",
            "legacy 1.0",
        ))
        .files("/usr/lib64/httpd/modules/mod_legacy.so")
        .sh(&format!("%triggerin -- {cond}"), "triggerin(httpd<2.0)", "")
        .sh(&format!("%triggerun -- {cond}"), "triggerun(httpd<2.0)", "")
        .sh(
            &format!("%triggerpostun -- {cond}"),
            "triggerpostun(httpd<2.0)",
            "",
        )
        .sh("%triggerin -- systemd", "triggerin(systemd)", "")
}

fn mandoc() -> Pkg {
    let collect = |sign: &str| {
        format!(
            "mandoc = mandoc or {{ todo = {{}}, count = 0 }}\n\
             for _, p in ipairs(files) do\n\
               mandoc.todo[#mandoc.todo + 1] = '{sign}' .. p\n\
               mandoc.count = mandoc.count + 1\n\
             end"
        )
    };
    let done = |what: &str| {
        format!(
            "local n = mandoc and mandoc.count or 0\n\
             local l = assert(io.open('{LOG}', 'a'))\n\
             l:write('mandoc-1.14.6 {what}: ' .. n .. ' pending from this process\\n')\n\
             l:close()\n\
             mandoc = nil"
        )
    };
    Pkg::new("mandoc", "1.14.6", false)
        .pre("Requires: glibc")
        .install(&script("/usr/bin/mandoc", "echo mandoc"))
        .install(&man("/usr/share/man/man1/mandoc.1.gz", ".TH MANDOC 1"))
        .files("/usr/bin/mandoc\n/usr/share/man/man1/mandoc.1.gz")
        .lua_files(
            "%filetriggerin -p <lua> -- /usr/share/man",
            "filetriggerin",
            &collect("+"),
        )
        .lua_files(
            "%filetriggerun -p <lua> -- /usr/share/man",
            "filetriggerun",
            &collect("-"),
        )
        .lua_files(
            "%transfiletriggerin -p <lua> -- /usr/share/man",
            "transfiletriggerin",
            &done("makewhatis after install"),
        )
        .lua_files(
            "%transfiletriggerpostun -p <lua> -- /usr/share/man",
            "transfiletriggerpostun",
            &done("makewhatis after erase"),
        )
}

fn shared_mime_info() -> Pkg {
    let update = "/usr/bin/update-mime-database -n /usr/share/mime >/dev/null 2>&1 || :";
    Pkg::new("shared-mime-info", "2.3", false)
        .pre("Requires: glibc\nRequires(post): /bin/sh")
        .install(&script(
            "/usr/bin/update-mime-database",
            &format!(
                "echo \"update-mime-database [$*]\" >> {LOG}\n\
                 ls /usr/share/mime/packages | sort > /usr/share/mime/mime.cache"
            ),
        ))
        .install(&put(
            "/usr/share/mime/packages/freedesktop.org.xml",
            "0644",
            "<mime-info/>",
        ))
        .files("/usr/bin/update-mime-database\n/usr/share/mime/packages/freedesktop.org.xml")
        .sh(
            "%post",
            "post",
            "/bin/touch -c /usr/share/mime/packages >/dev/null 2>&1 || :",
        )
        .sh_files(
            "%transfiletriggerin -- /usr/share/mime",
            "transfiletriggerin",
            update,
        )
        .sh_files(
            "%transfiletriggerpostun -- /usr/share/mime",
            "transfiletriggerpostun",
            update,
        )
}

fn procps() -> Pkg {
    Pkg::new("procps", "3.2.8", false)
        .pre("Requires: glibc")
        .install(&script("/usr/bin/ps", "echo procps 3.2.8"))
        .install(&put("/usr/lib64/libprocps.so.8", "0755", "procps 3.2.8"))
        .install(&man("/usr/share/man/man1/ps.1.gz", ".TH PS 1 procps"))
        .files("/usr/bin/ps\n/usr/lib64/libprocps.so.8\n/usr/share/man/man1/ps.1.gz")
        .sh("%post", "post", "")
        .sh("%preun", "preun", "")
        .sh("%postun", "postun", "")
}

fn procps_ng() -> Pkg {
    Pkg::new("procps-ng", "4.0.4", true)
        .pre("Requires: glibc\nObsoletes: procps < 3.2.9\nProvides: procps = 3.2.9-1")
        .install(&script("/usr/bin/ps", "echo procps-ng 4.0.4"))
        .install(&put("/usr/lib64/libproc2.so.0", "0755", "procps-ng 4.0.4"))
        .install(&man("/usr/share/man/man1/ps.1.gz", ".TH PS 1 procps-ng"))
        .files("/usr/bin/ps\n/usr/lib64/libproc2.so.0\n/usr/share/man/man1/ps.1.gz")
        .sh("%post", "post", "")
        .sh("%preun", "preun", "")
        .sh("%postun", "postun", "")
}

fn kernel(version: &'static str, v2: bool) -> Pkg {
    let m = format!("/usr/lib/modules/{version}");
    Pkg::new("kernel-core", version, v2)
        .pre("Provides: installonlypkg(kernel)\nRequires: systemd coreutils-single")
        .install(&put(
            &format!("{m}/vmlinuz"),
            "0755",
            &format!("vmlinuz {version}"),
        ))
        .install(&put(
            &format!("{m}/modules.builtin"),
            "0644",
            "kernel/fs/xfs/xfs.ko",
        ))
        .install(&format!(
            "mkdir -p \"$B/boot\"\ntouch \"$B/boot/vmlinuz-{version}\""
        ))
        .files(&format!(
            "%dir {m}\n{m}/vmlinuz\n{m}/modules.builtin\n\
             %ghost %attr(0755,root,root) /boot/vmlinuz-{version}"
        ))
        .sh("%post", "post", "")
        .sh(
            "%posttrans",
            "posttrans",
            &format!("/bin/kernel-install add {version} /lib/modules/{version}/vmlinuz || exit $?"),
        )
        .sh(
            "%preun",
            "preun",
            &format!("/bin/kernel-install remove {version} || exit $?"),
        )
        .sh("%postun", "postun", "")
}

/// A multilib library package with programs: both arches own
/// `/usr/sbin/saslpasswd2` (an ELF of each class: rpm installs the
/// x86_64 one and records the i686 one as "wrong color"), the same
/// `%license` and `%doc` files, and a library each in its `%{_libdir}`.
fn cyrus_sasl_lib(version: &'static str, v2: bool, arch: &'static str) -> Pkg {
    let (lib, bits) = libdir_bits(arch);
    let code = if v2 { 29 } else { 28 };
    Pkg::new("cyrus-sasl-lib", version, v2)
        .arch(arch)
        .pre("Requires: glibc")
        .install(&put_bytes(
            &format!("{lib}/libsasl2.so.3.0.0"),
            "0755",
            &elf(bits, code),
        ))
        .install(&format!(
            "ln -s libsasl2.so.3.0.0 \"$B{lib}/libsasl2.so.3\""
        ))
        .install(&put_bytes(
            "/usr/sbin/saslpasswd2",
            "0755",
            &elf(bits, code + 100),
        ))
        .install("mkdir -p \"$B/etc/sasl2\"")
        .install(&put(
            "/usr/share/licenses/cyrus-sasl-lib/COPYING",
            "0644",
            "Copyright (c) Carnegie Mellon University",
        ))
        .install(&put(
            "/usr/share/doc/cyrus-sasl-lib/AUTHORS",
            "0644",
            &format!("cyrus-sasl {version} authors"),
        ))
        .files(&format!(
            "%license /usr/share/licenses/cyrus-sasl-lib/COPYING\n\
             %doc /usr/share/doc/cyrus-sasl-lib/AUTHORS\n\
             {lib}/libsasl2.so.3.0.0\n{lib}/libsasl2.so.3\n\
             %dir /etc/sasl2\n/usr/sbin/saslpasswd2"
        ))
}

/// The other multilib pair: both arches own the `%config(noreplace)`
/// `/etc/krb5.conf` (changed in v2, edited by the admin in the tests) and
/// the `%lang` message catalogues `%find_lang` lists.
fn krb5_libs(version: &'static str, v2: bool, arch: &'static str) -> Pkg {
    let (lib, bits) = libdir_bits(arch);
    let conf = if v2 {
        "[libdefaults]\n    dns_lookup_realm = false\n    rdns = false"
    } else {
        "[libdefaults]\n    dns_lookup_realm = false"
    };
    let mut p = Pkg::new("krb5-libs", version, v2)
        .arch(arch)
        .pre("Requires: glibc")
        .install(&put("/etc/krb5.conf", "0644", conf))
        .install("mkdir -p \"$B/etc/krb5.conf.d\"")
        .install(&put_bytes(
            &format!("{lib}/libkrb5.so.3"),
            "0755",
            &elf(bits, if v2 { 3 } else { 2 }),
        ))
        .files(&format!(
            "%verify(not md5 size mtime) %config(noreplace) /etc/krb5.conf\n\
             %dir /etc/krb5.conf.d\n{lib}/libkrb5.so.3"
        ));
    for lang in KRB5_LANGS {
        let mo = format!("/usr/share/locale/{lang}/LC_MESSAGES/mit-krb5.mo");
        p = p
            .install(&put(&mo, "0644", &format!("mit-krb5 {version} {lang}")))
            .files(&format!("%lang({lang}) {mo}"));
    }
    p
}

/// A font package: its fontconfig file in `conf.avail` and the
/// `%config(noreplace)` symlink to it in `/etc/fonts/conf.d`, absolute in
/// v1 and relative in v2 (retargeted); `%license` and `%doc` files.
fn dejavu_fonts(version: &'static str, v2: bool) -> Pkg {
    let avail = "/usr/share/fontconfig/conf.avail/57-dejavu-sans-fonts.conf";
    let target = if v2 {
        "../../../usr/share/fontconfig/conf.avail/57-dejavu-sans-fonts.conf"
    } else {
        avail
    };
    Pkg::new("dejavu-sans-fonts", version, v2)
        .install(&put(
            "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
            "0644",
            &format!("DejaVu Sans {version}"),
        ))
        .install(&put(
            avail,
            "0644",
            &format!("<fontconfig><!-- dejavu {version} --></fontconfig>"),
        ))
        .install(&format!(
            "mkdir -p \"$B/etc/fonts/conf.d\"\n\
             ln -s {target} \"$B/etc/fonts/conf.d/57-dejavu-sans-fonts.conf\""
        ))
        .install(&put(
            "/usr/share/licenses/dejavu-sans-fonts/LICENSE",
            "0644",
            "Bitstream Vera Fonts Copyright",
        ))
        .install(&put(
            "/usr/share/doc/dejavu-sans-fonts/README.md",
            "0644",
            &format!("DejaVu fonts {version}"),
        ))
        .files(&format!(
            "%dir /usr/share/fonts/dejavu-sans-fonts\n\
             /usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf\n\
             {avail}\n\
             %config(noreplace) /etc/fonts/conf.d/57-dejavu-sans-fonts.conf\n\
             %license /usr/share/licenses/dejavu-sans-fonts/LICENSE\n\
             %doc /usr/share/doc/dejavu-sans-fonts/README.md"
        ))
}
