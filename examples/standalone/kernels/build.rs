fn main() {
    cohort_build::Builder::for_build_script().build_or_exit();
}
