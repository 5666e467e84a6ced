//! `printf!`, as the GPU prints it (through a child process).

use super::*;

/// Prints one line from each of the first `lines` threads (the tour's `hello`).
#[kernel]
pub fn hello(lines: u32, tag: f32) {
    let id = thread::global_id();
    if id < lines as u64 {
        printf!(
            "hello from thread %u of block %u: tag %.2f, id %llu, %d %5s|%-4x|%c %p\n",
            thread::thread_idx_x(),
            thread::block_idx_x(),
            tag,
            id,
            -(id as i32),
            c"ab",
            255u32,
            'Z',
            core::ptr::null::<i32>()
        );
    }
}

/// Runs `hello` in a child process (this test binary, filtered to `printf::printf_child`) and checks
/// its stdout, line by line, against what the GPU's `printf` prints (`%n`, which would write
/// through its argument, is refused at compile time by `printf!`; a null `%p` prints as the C
/// library prints it).
#[test]
fn printf_prints_the_gpus_format() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "printf::printf_child", "--nocapture", "--test-threads=1"])
        .env("COHORT_PRINTF_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // (The harness prints `test printf::printf_child ... ` before the kernel's first line.)
    let mut lines: Vec<&str> = text.lines().filter_map(|l| l.find("hello from").map(|at| &l[at..])).collect();
    lines.sort_unstable();
    let mut want: Vec<String> = (0..6u32)
        .map(|id| {
            format!(
                "hello from thread {} of block {}: tag 2.50, id {id}, {} {:>5}|{:<4x}|Z (nil)",
                id % 4,
                id / 4,
                -(id as i32),
                "ab",
                255
            )
        })
        .collect();
    want.sort_unstable();
    assert_eq!(lines, want, "stdout:\n{text}");
}

#[test]
fn printf_child() {
    if std::env::var_os("COHORT_PRINTF_CHILD").is_none() {
        return;
    }
    launch(&LaunchSpec::new(3u32, 4u32), &|| __cohort_kernel_hello(6, 2.5)).unwrap();
}
