// work.rs: Rust CPU work for e2e_names, for SECONDS (argv[1]): a generic function,
// a trait method through dyn, a closure and nested modules, so that both
// manglings (legacy and v0) have real names in the profile.
use std::time::{Duration, Instant};

pub mod shop {
    pub mod till {
        pub trait Priced {
            fn price(&self, seed: u64) -> u64;
        }

        pub struct Basket<T> {
            pub items: Vec<T>,
        }

        impl<T: Copy + Into<u64>> Priced for Basket<T> {
            #[inline(never)]
            fn price(&self, seed: u64) -> u64 {
                let mut s = seed;
                for &x in &self.items {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(x.into());
                }
                s
            }
        }

        #[inline(never)]
        pub fn total<P: Priced + ?Sized>(p: &P, rounds: u64) -> u64 {
            (0..rounds).fold(0u64, |acc, r| acc ^ p.price(r))
        }
    }
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let basket = shop::till::Basket { items: vec![3u32; 20000] };
    let dynamic: &dyn shop::till::Priced = &basket;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut acc = 0u64;
    while Instant::now() < end {
        acc ^= shop::till::total(dynamic, 50);
    }
    println!("done {}", acc);
}
