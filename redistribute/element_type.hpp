// The element types a distributed array may hold, and their MPI datatypes.
#pragma once

#include <mpi.h>

#include <complex>
#include <cstddef>
#include <string>
#include <string_view>

namespace tb {

enum class ElementType { f32, f64, c32, c64 };

inline constexpr ElementType kAllElementTypes[] = {ElementType::f32, ElementType::f64, ElementType::c32,
                                                   ElementType::c64};

template <class T>
constexpr ElementType element_type_of();
template <>
constexpr ElementType element_type_of<float>() { return ElementType::f32; }
template <>
constexpr ElementType element_type_of<double>() { return ElementType::f64; }
template <>
constexpr ElementType element_type_of<std::complex<float>>() { return ElementType::c32; }
template <>
constexpr ElementType element_type_of<std::complex<double>>() { return ElementType::c64; }

inline std::size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::f32: return sizeof(float);
    case ElementType::f64: return sizeof(double);
    case ElementType::c32: return sizeof(std::complex<float>);
    case ElementType::c64: return sizeof(std::complex<double>);
  }
  return 0;
}

// A predefined MPI datatype: never freed.
inline MPI_Datatype mpi_datatype(ElementType t) {
  switch (t) {
    case ElementType::f32: return MPI_FLOAT;
    case ElementType::f64: return MPI_DOUBLE;
    case ElementType::c32: return MPI_C_FLOAT_COMPLEX;
    case ElementType::c64: return MPI_C_DOUBLE_COMPLEX;
  }
  return MPI_DATATYPE_NULL;
}

// "float", "double", "complex<float>", "complex<double>".
std::string_view element_type_name(ElementType t);

// Accepts the names above, the short forms f32, f64, c32, c64, and numpy's float32, float64,
// complex64, complex128. Throws std::invalid_argument naming the accepted forms otherwise.
ElementType parse_element_type(std::string_view text);

}  // namespace tb
