import authRoutes from './auth.js'

export { authRoutes }
