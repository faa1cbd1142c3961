# Sourced by tests/compile-strict.sh and tests/compile-cxx.sh: the C++
# compiler that goes with $CC, unless CXX names one (a cross gcc's too:
# TRIPLET-gcc goes with TRIPLET-g++).
case "$CC" in
*clang*) CXX=${CXX:-clang++} ;;
*-gcc) CXX=${CXX:-${CC%gcc}g++} ;;
*) CXX=${CXX:-c++} ;;
esac
