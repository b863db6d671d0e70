// p_names: a Rust program whose symbol table is a sample of what Rust names look like
// (generics, traits, closures, impl blocks, nested modules, dyn, const generics, fn
// pointers, tuples, references, a non-ASCII identifier).  test/unit/u_demangle.c builds
// it with rustc twice (legacy and v0 mangling) and reads its names with nm.
#![allow(dead_code)]
use std::collections::HashMap;
use std::fmt;

pub mod outer {
    pub mod inner {
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct Point<T> {
            pub x: T,
            pub y: T,
        }

        impl<T: Copy + std::ops::Add<Output = T>> Point<T> {
            #[inline(never)]
            pub fn sum(&self) -> T {
                self.x + self.y
            }
        }

        impl Point<f64> {
            #[inline(never)]
            pub fn norm(&self) -> f64 {
                (self.x * self.x + self.y * self.y).sqrt()
            }
        }
    }

    pub trait Shape {
        fn area(&self) -> f64;
        fn name(&self) -> String {
            String::from("shape")
        }
    }

    pub struct Square(pub f64);
    pub struct Circle {
        pub r: f64,
    }

    impl Shape for Square {
        #[inline(never)]
        fn area(&self) -> f64 {
            self.0 * self.0
        }
    }

    impl Shape for Circle {
        #[inline(never)]
        fn area(&self) -> f64 {
            3.14159 * self.r * self.r
        }
        fn name(&self) -> String {
            format!("circle {}", self.r)
        }
    }
}

use outer::inner::Point;
use outer::Shape;

struct Grid<const W: usize, const H: usize> {
    cells: [[u8; W]; H],
}

impl<const W: usize, const H: usize> Grid<W, H> {
    #[inline(never)]
    fn count(&self) -> usize {
        self.cells.iter().map(|r| r.iter().filter(|&&c| c > 0).count()).sum()
    }
}

#[inline(never)]
fn flag<const B: bool, const C: char>() -> u32 {
    if B {
        C as u32
    } else {
        0
    }
}

#[inline(never)]
fn apply<F: Fn(i32) -> i32>(f: F, v: i32) -> i32 {
    f(v)
}

#[inline(never)]
fn call_ptr(f: fn(&str) -> usize, s: &str) -> usize {
    f(s)
}

#[inline(never)]
fn total_area(shapes: &[Box<dyn Shape>]) -> f64 {
    shapes.iter().map(|s| s.area()).sum()
}

#[inline(never)]
fn pair_swap<A: Clone, B: Clone>(p: &(A, B)) -> (B, A) {
    (p.1.clone(), p.0.clone())
}

#[inline(never)]
fn raw_read(p: *const u64, q: *mut u64) -> u64 {
    unsafe {
        *q += 1;
        *p
    }
}

#[inline(never)]
fn größe(v: &[u32]) -> usize {
    v.len()
}

#[inline(never)]
fn each_dyn(it: &mut dyn Iterator<Item = u32>) -> u32 {
    it.sum()
}

struct Wrapper<'a>(&'a str);

impl<'a> fmt::Display for Wrapper<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0)
    }
}

#[inline(never)]
fn higher_ranked(f: &dyn for<'x> Fn(&'x str) -> &'x str) -> usize {
    f("abc").len()
}

fn main() {
    let p = Point { x: 3i64, y: 4i64 };
    let q = Point { x: 3.0f64, y: 4.0f64 };
    let shapes: Vec<Box<dyn Shape>> = vec![Box::new(outer::Square(2.0)), Box::new(outer::Circle { r: 1.0 })];
    let mut words: HashMap<String, usize> = HashMap::new();
    for w in "a b a c".split(' ') {
        *words.entry(w.to_string()).or_insert(0) += 1;
    }
    let k = 7;
    let g = Grid::<3, 2> { cells: [[1, 0, 1], [0, 1, 1]] };
    let mut cnt = 0u64;
    let v = 41u64;
    let mut it = (1..5u32).map(|x| x * 2);
    let total = p.sum() as f64
        + q.norm()
        + total_area(&shapes)
        + apply(|x| x * k, 6) as f64
        + apply(move |x| x - k, 1) as f64
        + call_ptr(str::len, "hello") as f64
        + g.count() as f64
        + flag::<true, 'x'>() as f64
        + pair_swap(&(1u8, "two")).0.len() as f64
        + raw_read(&v, &mut cnt) as f64
        + größe(&[1, 2, 3]) as f64
        + each_dyn(&mut it) as f64
        + higher_ranked(&|s| &s[1..]) as f64
        + words.len() as f64;
    let names: Vec<String> = shapes.iter().map(|s| s.name()).collect();
    println!("{} {} {}", total, names.join(","), Wrapper("w"));
}
