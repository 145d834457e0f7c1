fn main() {
    println!("{:?}", revtx_book::experiments::PRESETS.len());
}
