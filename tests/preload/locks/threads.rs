// SPDX-License-Identifier: MIT
// threads.rs: a Rust program that spawns threads. Rust's standard library asks glibc for the
// main thread's stack at start-up and for each spawned thread's as it starts (its stack guard),
// through pthread_getattr_np. Prints the sum of four vectors' sums.
use std::thread;

fn main() {
    let handles: Vec<_> = (0..4u64)
        .map(|i| {
            thread::spawn(move || {
                let v: Vec<u64> = (0..100_000u64).map(|x| x * i).collect();
                v.iter().sum::<u64>()
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    println!("total {}", total);
}
