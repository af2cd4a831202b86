#include "redistribute/element_type.hpp"

#include <stdexcept>

namespace tb {

std::string_view element_type_name(ElementType t) {
  switch (t) {
    case ElementType::f32: return "float";
    case ElementType::f64: return "double";
    case ElementType::c32: return "complex<float>";
    case ElementType::c64: return "complex<double>";
  }
  return "?";
}

ElementType parse_element_type(std::string_view text) {
  if (text == "f32" || text == "float" || text == "float32") return ElementType::f32;
  if (text == "f64" || text == "double" || text == "float64") return ElementType::f64;
  if (text == "c32" || text == "complex<float>" || text == "complex64") return ElementType::c32;
  if (text == "c64" || text == "complex<double>" || text == "complex128") return ElementType::c64;
  throw std::invalid_argument("unknown element type '" + std::string(text) +
                              "'; use float, double, complex<float> or complex<double> (f32, f64, c32, c64)");
}

}  // namespace tb
